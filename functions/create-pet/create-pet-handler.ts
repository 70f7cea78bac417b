import type { Context } from 'aws-lambda'
import { readKeyContext } from '#shared/auth/key-context.ts'
import type { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import {
  CreatePetHeadersSchema,
  IDEMPOTENCY_KEY_HEADER,
} from '#shared/domain/idempotency-schema.ts'
import { NewPetSchema } from '#shared/domain/pet-schema.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { baseUrlOf } from '#shared/http/http-headers.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { type HttpPipelineOptions, httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { jsonBodyMiddleware } from '#shared/middleware/json-body-middleware.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import { createIdempotently } from './idempotent-create.ts'

const input = { headers: CreatePetHeadersSchema, body: NewPetSchema }

export interface CreatePetDependencies extends HttpPipelineOptions {
  pets: PetRepository
  idempotency: IdempotencyRepository
}

/** Lambda's maximum timeout (15 min) caps a lease when the context cannot say. */
const MAX_LEASE_MS = 15 * 60 * 1000

/** A claimed Idempotency-Key is held for the rest of this invocation: no longer can it run. */
const leaseOf = (context: Context): number => {
  const remaining = context?.getRemainingTimeInMillis?.()
  return typeof remaining === 'number' && remaining > 0
    ? Math.min(remaining, MAX_LEASE_MS)
    : MAX_LEASE_MS
}

/**
 * POST /pets: stores a new pet and answers 201 with it, its assigned id and its Location. With an
 * Idempotency-Key a repeat gets the first answer again instead of a second pet.
 */
export const createPetHandler = (deps: CreatePetDependencies) =>
  httpPipeline<RequestInput<typeof input>>(deps)
    .use(jsonBodyMiddleware())
    .use(validateRequestMiddleware(input))
    .handler(async (event, context) => {
      const { body, headers } = event.input
      const location = (petId: number) => `${baseUrlOf(event)}/pets/${petId}`
      const idempotencyKey = headers[IDEMPOTENCY_KEY_HEADER]
      if (idempotencyKey === undefined) {
        const pet = await deps.pets.create(body)
        return jsonResponse(201, pet, { Location: location(pet.id) })
      }
      // Keys are scoped to the API key: without the authorizer's context there is no scope.
      const key = readKeyContext(event)
      if (!key) throw new HttpError('unauthorized')
      return createIdempotently(deps, {
        scope: key.keyId,
        idempotencyKey,
        newPet: body,
        leaseMs: leaseOf(context),
        location,
      })
    })
