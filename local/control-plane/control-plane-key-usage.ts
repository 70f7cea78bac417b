import type { KeyUsageRepository } from '#keys/key-usage-repository.ts'
import { answerKeyUsageRequest, keyUsageRequestSchema } from '#keys/key-usage-requests.ts'
import { ControlPlaneError } from './control-plane-error.ts'

/**
 * The local control plane's `POST /_local/key-usage`: one request of the keys CLI (show, lift,
 * usage, list's TODAY) against the local stage's rate-limit table, through the same repository
 * the CLI uses on a deployed stage's table. A malformed request is a 400 naming the problem.
 */
export const keyUsageEndpoint =
  (repository: KeyUsageRepository) =>
  async (body: Record<string, unknown>): Promise<unknown> => {
    const parsed = keyUsageRequestSchema.safeParse(body)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      throw new ControlPlaneError(
        400,
        'BadRequestException',
        `Invalid key-usage request: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
      )
    }
    return answerKeyUsageRequest(repository, parsed.data)
  }
