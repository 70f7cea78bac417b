import type { PetRepository } from '#shared/data/pet-repository.ts'
import { NewPetSchema } from '#shared/domain/pet-schema.ts'
import { baseUrlOf } from '#shared/http/http-headers.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { type HttpPipelineOptions, httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { jsonBodyMiddleware } from '#shared/middleware/json-body-middleware.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'

const input = { body: NewPetSchema }

export interface CreatePetDependencies extends HttpPipelineOptions {
  pets: PetRepository
}

/** POST /pets: stores a new pet and answers 201 with it, its assigned id and its Location. */
export const createCreatePetHandler = (deps: CreatePetDependencies) =>
  httpPipeline<RequestInput<typeof input>>(deps)
    .use(jsonBodyMiddleware())
    .use(validateRequestMiddleware(input))
    .handler(async (event) => {
      const pet = await deps.pets.create(event.input.body)
      return jsonResponse(201, pet, { Location: `${baseUrlOf(event)}/pets/${pet.id}` })
    })
