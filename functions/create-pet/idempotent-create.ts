import type { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { requestHash } from '#shared/data/idempotency-repository.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import { IDEMPOTENT_REPLAYED_HEADER } from '#shared/domain/idempotency-schema.ts'
import type { NewPet, Pet } from '#shared/domain/pet-schema.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { type HttpResponse, JSON_CONTENT_TYPE, jsonResponse } from '#shared/http/http-response.ts'
import { stringifyJson } from '#shared/http/json-codec.ts'

export interface IdempotentCreateRequest {
  /** The API key's id: Idempotency-Keys of different clients never meet. */
  scope: string
  idempotencyKey: string
  newPet: NewPet
  /** How long this attempt holds the key: the invocation's remaining time. */
  leaseMs: number
  location: (petId: number) => string
}

/** Member order and spacing of the client's JSON do not matter: the validated values do. */
const canonicalRequest = (pet: NewPet): string =>
  stringifyJson([pet.name, pet.categoryId, pet.status ?? null])

/**
 * createPet with an Idempotency-Key (docs/api.md, "Idempotent creation"): claim the key with a
 * pet id, write that pet, store the 201. A repeat replays the stored 201; a retry of an attempt
 * that died takes over its record and writes the same id, which a put never duplicates.
 */
export const createIdempotently = async (
  deps: { pets: PetRepository; idempotency: IdempotencyRepository },
  request: IdempotentCreateRequest,
): Promise<HttpResponse> => {
  const claim = await deps.idempotency.claim({
    scope: request.scope,
    idempotencyKey: request.idempotencyKey,
    requestHash: requestHash(canonicalRequest(request.newPet)),
    // Taken before the claim so the record can name it; unused on a repeat (ids may have gaps).
    petId: await deps.pets.allocateId(),
    leaseMs: request.leaseMs,
  })
  switch (claim.kind) {
    case 'mismatch':
      throw new HttpError('idempotency_key_reused')
    case 'in_progress':
      throw new HttpError('idempotency_in_progress', {
        headers: retryAfterHeaders(claim.retryAfterMs / 1000),
      })
    case 'replay':
      return {
        statusCode: 201,
        headers: {
          'Content-Type': JSON_CONTENT_TYPE,
          Location: request.location(claim.petId),
          [IDEMPOTENT_REPLAYED_HEADER]: 'true',
        },
        body: claim.response,
      }
  }
  const pet: Pet = { id: claim.petId, ...request.newPet }
  try {
    // `exists` is this very pet: written by the dead attempt this one took over (same body
    // hash), or by this attempt when the SDK retried a put whose answer was lost.
    await deps.pets.insert(pet)
    const response = jsonResponse(201, pet, { Location: request.location(pet.id) })
    await deps.idempotency.complete(claim.recordKey, pet.id, response.body)
    return response
  } catch (error) {
    // Let the client's retry take over now rather than after the lease; the lease is the fallback.
    await deps.idempotency.release(claim.recordKey, pet.id).catch(() => undefined)
    throw error
  }
}
