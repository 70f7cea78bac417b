import type { CursorCodec } from '#shared/data/cursor-codec.ts'
import type { PetRepository } from '#shared/data/pet-repository.ts'
import { ListPetsQuerySchema } from '#shared/domain/list-pets-query-schema.ts'
import type { PetStatus } from '#shared/domain/pet-schema.ts'
import { validationFailed } from '#shared/errors/http-error.ts'
import { baseUrlOf } from '#shared/http/http-headers.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { type HttpPipelineOptions, operationPipeline } from '#shared/middleware/http-pipeline.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'

const input = { query: ListPetsQuerySchema }

export interface ListPetsDependencies extends HttpPipelineOptions {
  pets: PetRepository
  cursors: CursorCodec
}

/** GET /pets: a page of pets, optionally filtered by status; `Link: rel="next"` when more exist. */
export const listPetsHandler = (deps: ListPetsDependencies) =>
  operationPipeline<RequestInput<typeof input>>('listPets', deps)
    .use(validateRequestMiddleware(input))
    .handler(async (event) => {
      const { limit, status, cursor } = event.input.query
      const afterId = cursor === undefined ? undefined : readCursor(deps.cursors, cursor, status)
      const page = await deps.pets.list({ limit, status, afterId })
      if (page.lastId === undefined) return jsonResponse(200, page.pets)

      const next = deps.cursors.encode({ lastId: page.lastId, status })
      const url = new URL(`${baseUrlOf(event)}/pets`)
      url.searchParams.set('limit', String(limit))
      if (status) url.searchParams.set('status', status)
      url.searchParams.set('cursor', next)
      return jsonResponse(200, page.pets, {
        Link: `<${url.href}>; rel="next"`,
        'X-Next-Cursor': next,
      })
    })

const readCursor = (
  cursors: CursorCodec,
  cursor: string,
  status: PetStatus | undefined,
): number => {
  const position = cursors.decode(cursor, status)
  if (!position) {
    throw validationFailed([
      {
        field: 'cursor',
        message: 'is not a cursor this listing issued (altered, or made for another status)',
      },
    ])
  }
  return position.lastId
}
