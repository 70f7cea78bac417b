import type { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { requestHash } from '#shared/data/idempotency-repository.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import { IDEMPOTENT_REPLAYED_HEADER } from '#shared/domain/idempotency-schema.ts'
import type { NewPet } from '#shared/domain/new-pet-schema.ts'
import type { Pet } from '#shared/domain/pet-schema.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { type HttpResponse, JSON_CONTENT_TYPE, jsonResponse } from '#shared/http/http-response.ts'
import { stringifyJson } from '#shared/http/json-codec.ts'

/** What the use case needs of the datastore. */
export interface CreatePetPorts {
  pets: Pick<PetRepository, 'create' | 'allocateId' | 'insert'>
  idempotency: Pick<IdempotencyRepository, 'claim' | 'complete' | 'release'>
}

export interface CreatePetRequest {
  newPet: NewPet
  /** The pet's URL, for `Location`. */
  location: (petId: number) => string
  /** Present when the client sent an Idempotency-Key. */
  idempotency?: {
    /** The API key's id: Idempotency-Keys of different clients never meet. */
    scope: string
    key: string
    /** How long this attempt holds the key: the invocation's remaining time. */
    leaseMs: number
  }
}

/** Member order and spacing of the client's JSON do not matter: the validated values do. */
const canonicalRequest = (pet: NewPet): string =>
  stringifyJson([pet.name, pet.categoryId, pet.status ?? null])

const created = (pet: Pet, location: CreatePetRequest['location']): HttpResponse =>
  jsonResponse(201, pet, { Location: location(pet.id) })

/**
 * The createPet use case (docs/api.md, "Create a pet" and "Idempotent creation").
 *
 * Primary course without an Idempotency-Key: 1. put the pet under a fresh id; 2. answer 201 with
 * it and its Location.
 *
 * Primary course with an Idempotency-Key: 1. reserve a pet id and claim the key with it and the
 * request's hash; 2. put the pet under that id; 3. store the 201 on the claim and answer it.
 *
 * Alternate courses: a repeat of the same request replays the stored 201; another body gets 422;
 * a key still held by a live attempt gets 409 with Retry-After; an attempt that fails releases
 * its claim, and the retry of one that died takes its record over and writes the same id, which
 * a put never duplicates.
 *
 * @example
 * const response = await createPet(deps, {
 *   newPet: { name: 'Rex', categoryId: 1n },
 *   location: (id) => `https://api.example.com/v1/pets/${id}`,
 *   idempotency: { scope: keyId, key: 'order-42', leaseMs: context.getRemainingTimeInMillis() },
 * })
 */
export const createPet = async (
  deps: CreatePetPorts,
  request: CreatePetRequest,
): Promise<HttpResponse> => {
  const { newPet, location, idempotency } = request
  if (!idempotency) return created(await deps.pets.create(newPet), location)

  const claim = await deps.idempotency.claim({
    scope: idempotency.scope,
    idempotencyKey: idempotency.key,
    requestHash: requestHash(canonicalRequest(newPet)),
    // Taken before the claim so the record can name it; unused on a repeat (ids may have gaps).
    petId: await deps.pets.allocateId(),
    leaseMs: idempotency.leaseMs,
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
          Location: location(claim.petId),
          [IDEMPOTENT_REPLAYED_HEADER]: 'true',
        },
        body: claim.response,
      }
  }
  const pet: Pet = { id: claim.petId, ...newPet }
  try {
    // `exists` is this very pet: written by the dead attempt this one took over (same body
    // hash), or by this attempt when the SDK retried a put whose answer was lost.
    await deps.pets.insert(pet)
    const response = created(pet, location)
    await deps.idempotency.complete(claim.recordKey, pet.id, response.body)
    return response
  } catch (error) {
    // Let the client's retry take over now rather than after the lease; the lease is the fallback.
    await deps.idempotency.release(claim.recordKey, pet.id).catch(() => undefined)
    throw error
  }
}
