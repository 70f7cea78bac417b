import { describe, expect, it, vi } from 'vitest'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import { routeOf } from '#shared/config/routes-config.ts'
import type { Pet } from '#shared/domain/pet-schema.ts'
import { JSON_CONTENT_TYPE } from '#shared/http/http-response.ts'
import type { Clock } from '#shared/time/clock.ts'
import {
  FIXTURE_BASE_URL,
  FIXTURE_REQUEST_ID,
  lambdaContext,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { fixedClock } from '#test/support/fixed-clock.ts'

const { deprecation } = routeOf('getPet')
const SUNSET_MS = Date.UTC(2030, 11, 5) // 5 December 2030, 00:00:00 UTC (docs/api.md)
const SUNSET_HEADER = 'Thu, 05 Dec 2030 00:00:00 GMT'
const BEFORE_SUNSET = fixedClock(Date.UTC(2027, 0, 15, 12))

/** Where the client called from: the host it named and what precedes /v1 in its path. */
const EXECUTE_API = { headers: {}, basePath: undefined, base: FIXTURE_BASE_URL }
const CUSTOM_DOMAIN = {
  headers: { host: 'api.petstore.example', 'x-forwarded-proto': 'https' },
  basePath: '',
  base: 'https://api.petstore.example/v1',
}
const LOCAL = {
  headers: { Host: '127.0.0.1:3000', 'X-Forwarded-Proto': 'http' },
  basePath: '',
  base: 'http://127.0.0.1:3000/v1',
}

/** GET /pets/{petId} as API Gateway delivers it through `where`. */
const getPetEvent = (
  where: { headers: Record<string, string>; basePath: string | undefined } = EXECUTE_API,
  petId = '7',
) =>
  restEvent({
    resource: '/pets/{petId}',
    pathParameters: { petId },
    headers: where.headers,
    basePath: where.basePath,
  })

const REX: Pet = { id: 7, name: 'Rex', categoryId: 1n }

/** The real getPet handler over a stub repository in which pet 7 exists, and the given clock. */
const getPet = (clock: Clock) => {
  const pets = { get: vi.fn(async (id: number) => (id === REX.id ? REX : undefined)) }
  const handler = getPetHandler({ logger: fakeLogger(), pets, clock })
  const call = async (event = getPetEvent()) => {
    const response = await handler(event, lambdaContext('petstore-get-pet'))
    return { ...response, json: JSON.parse(response.body) as Record<string, unknown> }
  }
  return { call, pets }
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
    const { call, pets } = getPet(fixedClock(now))
    const response = await call()
    expect(response.statusCode).toBe(410)
    expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
    expect(response.json).toMatchObject({
      code: 'gone',
      status: 410,
      requestId: FIXTURE_REQUEST_ID,
    })
    expect(response.json.message).toEqual(expect.stringContaining('GET /pets'))
    expectDeprecationHeaders(response.headers)
    expect(pets.get).not.toHaveBeenCalled()
  })

  it('answers 410 after the sunset even for an id that never existed or is invalid', async () => {
    const { call } = getPet(fixedClock(SUNSET_MS))
    expect((await call(getPetEvent(EXECUTE_API, '8'))).statusCode).toBe(410)
    expect((await call(getPetEvent(EXECUTE_API, 'abc'))).statusCode).toBe(410)
  })
})
