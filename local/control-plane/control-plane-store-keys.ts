import { StoreKeyNotFound, type StoreKeyRepository } from '#keys/store-key-repository.ts'
import { answerStoreKeyRequest, storeKeyRequestSchema } from '#keys/store-key-requests.ts'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'
import { ControlPlaneError } from './control-plane-error.ts'

/**
 * The local control plane's `POST /_local/store-keys`: one call of the keys CLI on the local
 * stage's store key table, through the same repository the CLI uses on a deployed stage's. A
 * malformed request is a 400 naming the problem; a key that does not exist a 404; a new key whose
 * id exists a 409.
 */
export const storeKeysEndpoint =
  (repository: StoreKeyRepository) =>
  async (body: Record<string, unknown>): Promise<unknown> => {
    const parsed = storeKeyRequestSchema.safeParse(body)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new ControlPlaneError(
        400,
        'BadRequestException',
        `Invalid store-keys request: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
      )
    }
    try {
      return await answerStoreKeyRequest(repository, parsed.data)
    } catch (error) {
      if (error instanceof StoreKeyNotFound) {
        throw new ControlPlaneError(404, 'NotFoundException', error.message)
      }
      if (isConditionFailure(error)) {
        throw new ControlPlaneError(409, 'ConflictException', 'A store key with that id exists')
      }
      throw error
    }
  }
