import type { Context } from 'aws-lambda'
import { readKeyContext } from '#shared/auth/key-context.ts'
import type { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import {
  CreatePetHeadersSchema,
  IDEMPOTENCY_KEY_HEADER,
} from '#shared/domain/idempotency-schema.ts'
import { NewPetSchema } from '#shared/domain/new-pet-schema.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { baseUrlOf } from '#shared/http/http-headers.ts'
import type { ApiEvent } from '#shared/http/http-types.ts'
import { type HttpPipelineOptions, operationPipeline } from '#shared/middleware/http-pipeline.ts'
import { jsonBodyMiddleware } from '#shared/middleware/json-body-middleware.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import { type CreatePetRequest, createPet } from './create-pet-use-case.ts'

// createPet's middy handler: POST /pets, with its Idempotency-Key lease.

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

/** The Idempotency-Key's scope and lease, when the client sent one. */
const idempotencyOf = (
  event: ApiEvent<unknown>,
  key: string | undefined,
  context: Context,
): CreatePetRequest['idempotency'] => {
  if (key === undefined) return undefined
  // Keys are scoped to the API key: without the authorizer's context there is no scope.
  const caller = readKeyContext(event)
  if (!caller) throw new HttpError('unauthorized')
  return { scope: caller.keyId, key, leaseMs: leaseOf(context) }
}

/**
 * POST /pets: the HTTP side of the createPet use case (create-pet-use-case.ts). The pipeline
 * parses and validates the request; the use case stores the pet and makes the 201 with its id
 * and Location, or replays the first answer for a repeated Idempotency-Key.
 */
export const createPetHandler = (deps: CreatePetDependencies) =>
  operationPipeline<RequestInput<typeof input>>('createPet', deps)
    .use(jsonBodyMiddleware())
    .use(validateRequestMiddleware(input))
    .handler(async (event, context) => {
      const { body, headers } = event.input
      const idempotency = idempotencyOf(event, headers[IDEMPOTENCY_KEY_HEADER], context)
      return createPet(deps, {
        newPet: body,
        location: (petId) => `${baseUrlOf(event)}/pets/${petId}`,
        ...(idempotency ? { idempotency } : {}),
      })
    })
