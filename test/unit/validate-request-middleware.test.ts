import { describe, expect, it, vi } from 'vitest'
import { ListPetsQuerySchema } from '#shared/domain/list-pets-query-schema.ts'
import { NewPetSchema } from '#shared/domain/new-pet-schema.ts'
import { PetPathSchema } from '#shared/domain/pet-path-schema.ts'
import { JSON_CONTENT_TYPE, jsonResponse } from '#shared/http/http-response.ts'
import type { ApiEvent } from '#shared/http/http-types.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { jsonBodyMiddleware } from '#shared/middleware/json-body-middleware.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import {
  FIXTURE_REQUEST_ID,
  lambdaContext,
  type RestRequest,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const parse = async (response: {
  statusCode: number
  headers: Record<string, string>
  body: string
}) => ({
  ...response,
  json: JSON.parse(response.body) as { details?: { field: string; message: string }[] } & Record<
    string,
    unknown
  >,
})

/** Each handler echoes the validated input, so a test sees the typed values it would get. */
const createInput = { body: NewPetSchema }
const createHandlerSpy = vi.fn()
const createPet = httpPipeline<RequestInput<typeof createInput>>({ logger: fakeLogger() })
  .use(jsonBodyMiddleware())
  .use(validateRequestMiddleware(createInput))
  .handler(async (event) => {
    createHandlerSpy()
    return jsonResponse(201, event.input.body)
  })

const listInput = { query: ListPetsQuerySchema }
const listPets = httpPipeline<RequestInput<typeof listInput>>({ logger: fakeLogger() })
  .use(validateRequestMiddleware(listInput))
  .handler(async (event) => jsonResponse(200, event.input.query))

const getInput = { path: PetPathSchema, query: ListPetsQuerySchema }
const getPet = httpPipeline<RequestInput<typeof getInput>>({ logger: fakeLogger() })
  .use(validateRequestMiddleware(getInput))
  .handler(async (event) => jsonResponse(200, event.input))

const context = lambdaContext()

const post = async (body: string) =>
  parse(
    await createPet(
      restEvent({ method: 'POST', headers: { 'Content-Type': 'application/json' }, body }),
      context,
    ),
  )

const list = async (query?: RestRequest['query'], event: ApiEvent<never> = restEvent({ query })) =>
  parse(await listPets(event, context))

const fields = (json: { details?: { field: string }[] }) =>
  (json.details ?? []).map((detail) => detail.field).sort()

const expectValidationFailed = (response: Awaited<ReturnType<typeof parse>>): void => {
  expect(response.statusCode).toBe(400)
  expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
  expect(response.json).toMatchObject({
    code: 'validation_failed',
    status: 400,
    requestId: FIXTURE_REQUEST_ID,
  })
  expect(typeof response.json.message).toBe('string')
  for (const detail of response.json.details ?? []) {
    expect(Object.keys(detail).sort()).toEqual(['field', 'message'])
    expect(detail.message.length).toBeGreaterThan(0)
  }
}

describe('validate request middleware', () => {
  describe('body', () => {
    it('gives the handler the validated pet, categoryId exact', async () => {
      const response = await post('{"name":"Rex","categoryId":9223372036854775807,"status":"sold"}')
      expect(response.statusCode).toBe(201)
      expect(response.body).toBe('{"name":"Rex","categoryId":9223372036854775807,"status":"sold"}')
    })

    it('names a missing required field', async () => {
      createHandlerSpy.mockClear()
      const response = await post('{"name":"Rex"}')
      expectValidationFailed(response)
      expect(response.json.details).toEqual([{ field: 'categoryId', message: 'is required' }])
      expect(createHandlerSpy).not.toHaveBeenCalled()
    })

    it('names every broken field in one response', async () => {
      const response = await post(
        '{"name":"  ","categoryId":1.5,"status":"lost","id":7,"extra":true}',
      )
      expectValidationFailed(response)
      expect(fields(response.json)).toEqual(['categoryId', 'extra', 'id', 'name', 'status'])
    })

    it('says which values status takes', async () => {
      const response = await post('{"name":"Rex","categoryId":1,"status":"lost"}')
      expectValidationFailed(response)
      expect(response.json.details).toEqual([
        { field: 'status', message: 'must be one of available, pending, sold' },
      ])
    })

    it('says unknown members are not known fields', async () => {
      const response = await post('{"name":"Rex","categoryId":1,"id":7}')
      expectValidationFailed(response)
      expect(response.json.details).toEqual([{ field: 'id', message: 'is not a known field' }])
    })

    it('rejects an empty object naming both required fields', async () => {
      const response = await post('{}')
      expectValidationFailed(response)
      expect(fields(response.json)).toEqual(['categoryId', 'name'])
    })

    it('rejects categoryId beyond int64', async () => {
      const response = await post('{"name":"Rex","categoryId":9223372036854775808}')
      expectValidationFailed(response)
      expect(response.json.details).toEqual([
        { field: 'categoryId', message: 'must be within the int64 range' },
      ])
    })

    it('leaves invalid JSON to the body parser (400 invalid_json, not validation_failed)', async () => {
      const response = await post('{"name":')
      expect(response.statusCode).toBe(400)
      expect(response.json.code).toBe('invalid_json')
    })
  })

  describe('query', () => {
    it('applies the limit default', async () => {
      const response = await list()
      expect(response.statusCode).toBe(200)
      expect(response.json).toEqual({ limit: 20 })
    })

    it('gives typed values', async () => {
      const response = await list({ limit: '5', status: 'sold', cursor: 'abc.def' })
      expect(response.json).toEqual({ limit: 5, status: 'sold', cursor: 'abc.def' })
    })

    it.each(['0', '101', 'abc', '1.5', '', '-1'])(
      'rejects limit=%j naming limit',
      async (limit) => {
        const response = await list({ limit })
        expectValidationFailed(response)
        expect(fields(response.json)).toEqual(['limit'])
      },
    )

    it('rejects a repeated limit even though the single-value map looks fine', async () => {
      const response = await list({ limit: ['5', '10'] })
      expectValidationFailed(response)
      expect(response.json.details).toEqual([{ field: 'limit', message: 'must be given once' }])
    })

    it('reads the single-value map when the multi-value one is missing', async () => {
      const event = restEvent({ query: { limit: '7' } })
      event.multiValueQueryStringParameters = null
      const response = await list(undefined, event)
      expect(response.json).toEqual({ limit: 7 })
    })

    it('names limit and status together', async () => {
      const response = await list({ limit: '0', status: 'lost' })
      expectValidationFailed(response)
      expect(fields(response.json)).toEqual(['limit', 'status'])
    })

    it('says which values status takes, and how long a cursor may be', async () => {
      const response = await list({ status: 'lost', cursor: 'x'.repeat(1025) })
      expectValidationFailed(response)
      expect(response.json.details).toEqual([
        { field: 'status', message: 'must be one of available, pending, sold' },
        {
          field: 'cursor',
          message: 'must be the X-Next-Cursor of a previous page, as given (1 to 1024 characters)',
        },
      ])
    })

    it('ignores unknown query parameters', async () => {
      const response = await list({ limit: '3', utm_source: 'mail' })
      expect(response.statusCode).toBe(200)
      expect(response.json).toEqual({ limit: 3 })
    })
  })

  describe('path', () => {
    const get = async (petId: string, query: Record<string, string> = {}) =>
      parse(
        await getPet(
          restEvent({ resource: '/pets/{petId}', pathParameters: { petId }, query }),
          context,
        ),
      )

    it('gives the petId as a number', async () => {
      const response = await get('42')
      expect(response.statusCode).toBe(200)
      expect(response.json).toEqual({ path: { petId: 42 }, query: { limit: 20 } })
    })

    it.each(['0', '-1', 'abc', '1.5', '99999999999999999999'])(
      'rejects petId %j naming petId',
      async (petId) => {
        const response = await get(petId)
        expectValidationFailed(response)
        expect(fields(response.json)).toEqual(['petId'])
      },
    )

    it('names path and query fields together', async () => {
      const response = await get('abc', { limit: '500' })
      expectValidationFailed(response)
      expect(fields(response.json)).toEqual(['limit', 'petId'])
    })
  })
})
