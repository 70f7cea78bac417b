import type { PetRepository } from '#shared/data/pet-repository.ts'
import { PetPathSchema } from '#shared/domain/pet-path-schema.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { type HttpPipelineOptions, operationPipeline } from '#shared/middleware/http-pipeline.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import type { Clock } from '#shared/time/clock.ts'

const input = { path: PetPathSchema }

export interface GetPetDependencies extends HttpPipelineOptions {
  pets: Pick<PetRepository, 'get'>
  clock: Clock
}

/**
 * GET /pets/{petId}: one pet, or 404 pet_not_found (deprecated by its route entry: 410 gone after
 * the sunset).
 */
export const getPetHandler = (deps: GetPetDependencies) =>
  operationPipeline<RequestInput<typeof input>>('getPet', deps)
    .use(validateRequestMiddleware(input))
    .handler(async (event) => {
      const { petId } = event.input.path
      // Ids are below 2^53; a larger one cannot name a pet.
      const pet = Number.isSafeInteger(petId) ? await deps.pets.get(petId) : undefined
      if (!pet)
        throw new HttpError('pet_not_found', {
          message: `No pet with id ${event.pathParameters?.petId}.`,
        })
      return jsonResponse(200, pet)
    })
