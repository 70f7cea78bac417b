import { routeOf } from '#shared/config/routes-config.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import { PetPathSchema } from '#shared/domain/pet-path-schema.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { deprecationMiddleware } from '#shared/middleware/deprecation-middleware.ts'
import { type HttpPipelineOptions, httpPipeline } from '#shared/middleware/http-pipeline.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import type { Clock } from '#shared/time/clock.ts'

const input = { path: PetPathSchema }
const { deprecation } = routeOf('getPet')

export interface GetPetDependencies extends HttpPipelineOptions {
  pets: Pick<PetRepository, 'get'>
  clock: Clock
}

/** GET /pets/{petId} (deprecated): one pet, or 404 pet_not_found; 410 gone after the sunset. */
export const getPetHandler = (deps: GetPetDependencies) =>
  httpPipeline<RequestInput<typeof input>>(deps)
    .use(deprecationMiddleware(deprecation, deps.clock))
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
