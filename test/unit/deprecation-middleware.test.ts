import type { Context } from 'aws-lambda'
import { describe, expect, it, vi } from 'vitest'
import { routeOf } from '#shared/config/routes-config.ts'
import { PetPathSchema } from '#shared/domain/pet-schema.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { JSON_CONTENT_TYPE, jsonResponse } from '#shared/http/http-response.ts'
import { deprecationMiddleware } from '#shared/middleware/deprecation-middleware.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import type { ApiEvent } from '#shared/middleware/http-types.ts'
import {
  type RequestInput,
  validateRequestMiddleware,
} from '#shared/middleware/validate-request-middleware.ts'
import { type Clock, fixedClock } from '#shared/time/clock.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const { deprecation } = routeOf('getPet')
const SUNSET_MS = Date.UTC(2030, 11, 5) // 5 December 2030, 00:00:00 UTC (interface section 4.3)
const SUNSET_HEADER = 'Thu, 05 Dec 2030 00:00:00 GMT'
const BEFORE_SUNSET = fixedClock(Date.UTC(2027, 0, 15, 12))

const EXECUTE_API = {
  headers: { Host: 'a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', 'X-Forwarded-Proto': 'https' },
  path: '/production/v1/pets/7',
  base: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/production/v1',
}
const CUSTOM_DOMAIN = {
  headers: { host: 'api.petstore.example', 'x-forwarded-proto': 'https' },
  path: '/v1/pets/7',
  base: 'https://api.petstore.example/v1',
}
const LOCAL = {
  headers: { Host: '127.0.0.1:3000', 'X-Forwarded-Proto': 'http' },
  path: '/v1/pets/7',
  base: 'http://127.0.0.1:3000/v1',
}

/** GET /pets/{petId} as API Gateway delivers it: `path` without the stage, requestContext.path with it. */
const getPetEvent = (
  where: { headers: Record<string, string>; path: string } = EXECUTE_API,
  petId = '7',
): ApiEvent<never> =>
  ({
    httpMethod: 'GET',
    path: `/v1/pets/${petId}`,
    resource: '/v1/pets/{petId}',
    headers: where.headers,
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { petId },
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    requestContext: {
      requestId: 'req-deprecated-1',
      path: where.path.replace(/\/7$/, `/${petId}`),
      httpMethod: 'GET',
    },
  }) as unknown as ApiEvent<never>

/** The getPet chain: pet 7 exists, every other id is 404. */
const input = { path: PetPathSchema }
const getPet = (clock: Clock) => {
  const handlerCalls = vi.fn()
  const handler = httpPipeline<RequestInput<typeof input>>({ logger: fakeLogger() })
    .use(deprecationMiddleware(deprecation, clock))
    .use(validateRequestMiddleware(input))
    .handler(async (event) => {
      handlerCalls()
      if (event.input.path.petId !== 7) throw new HttpError('pet_not_found')
      return jsonResponse(200, { id: 7, name: 'Rex', categoryId: 1n })
    })
  const call = async (event: ApiEvent<never> = getPetEvent()) => {
    const response = await handler(event, {} as Context)
    return { ...response, json: JSON.parse(response.body) as Record<string, unknown> }
  }
  return { call, handlerCalls }
}

const expectDeprecationHeaders = (headers: Record<string, string>, base = EXECUTE_API.base) => {
  expect(headers.Deprecation).toBe(`@${Date.parse(deprecation.deprecatedAt) / 1000}`)
  expect(headers.Sunset).toBe(SUNSET_HEADER)
  expect(headers.Link).toBe(`<${base}/pets>; rel="successor-version"`)
}

describe('deprecation middleware (getPet)', () => {
  it('is configured for removal on 5 December 2030, replaced by GET /pets', () => {
    expect(Date.parse(deprecation.sunsetAt)).toBe(SUNSET_MS)
    expect(deprecation.successorPath).toBe('/pets')
    expect(Date.parse(deprecation.deprecatedAt)).toBeLessThan(SUNSET_MS)
  })

  it('marks a successful response with Deprecation, Sunset and a successor Link', async () => {
    const response = await getPet(BEFORE_SUNSET).call()
    expect(response.statusCode).toBe(200)
    expect(response.json).toEqual({ id: 7, name: 'Rex', categoryId: 1 })
    expectDeprecationHeaders(response.headers)
    expect(response.headers.Deprecation).toMatch(/^@\d+$/)
  })

  it.each([
    ['the execute-api stage path', EXECUTE_API],
    ['a custom domain', CUSTOM_DOMAIN],
    ['the local server', LOCAL],
  ])('links the successor under the base address of %s', async (_label, where) => {
    const response = await getPet(BEFORE_SUNSET).call(getPetEvent(where))
    expect(response.headers.Link).toBe(`<${where.base}/pets>; rel="successor-version"`)
  })

  it('marks a 404 too', async () => {
    const response = await getPet(BEFORE_SUNSET).call(getPetEvent(EXECUTE_API, '8'))
    expect(response.statusCode).toBe(404)
    expect(response.json.code).toBe('pet_not_found')
    expectDeprecationHeaders(response.headers)
  })

  it('marks a 400 too', async () => {
    const response = await getPet(BEFORE_SUNSET).call(getPetEvent(EXECUTE_API, 'abc'))
    expect(response.statusCode).toBe(400)
    expect(response.json.code).toBe('validation_failed')
    expectDeprecationHeaders(response.headers)
  })

  it('still answers one millisecond before the sunset', async () => {
    const response = await getPet(fixedClock(SUNSET_MS - 1)).call()
    expect(response.statusCode).toBe(200)
  })

  it.each([
    ['at the sunset instant', SUNSET_MS],
    ['one millisecond after', SUNSET_MS + 1],
    ['years after', Date.UTC(2035, 5, 1)],
  ])('answers 410 gone %s, with an Error body and the headers', async (_label, now) => {
    const { call, handlerCalls } = getPet(fixedClock(now))
    const response = await call()
    expect(response.statusCode).toBe(410)
    expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
    expect(response.json).toMatchObject({
      code: 'gone',
      status: 410,
      requestId: 'req-deprecated-1',
    })
    expect(response.json.message).toEqual(expect.stringContaining('GET /pets'))
    expectDeprecationHeaders(response.headers)
    expect(handlerCalls).not.toHaveBeenCalled()
  })

  it('answers 410 after the sunset even for an id that never existed or is invalid', async () => {
    const { call } = getPet(fixedClock(SUNSET_MS))
    expect((await call(getPetEvent(EXECUTE_API, '8'))).statusCode).toBe(410)
    expect((await call(getPetEvent(EXECUTE_API, 'abc'))).statusCode).toBe(410)
  })
})
