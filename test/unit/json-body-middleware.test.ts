import { describe, expect, it } from 'vitest'
import { JSON_CONTENT_TYPE, jsonResponse } from '#shared/http/http-response.ts'
import type { ApiEvent } from '#shared/http/http-types.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { jsonBodyMiddleware, MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'
import {
  FIXTURE_REQUEST_ID,
  lambdaContext,
  type RestRequest,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/** POST /v1/pets with this body (the fixture sends no Content-Type: `headers` sets it). */
const postEvent = (
  body: string | null,
  headers: Record<string, string> = { 'Content-Type': 'application/json' },
  extra: Pick<RestRequest, 'isBase64Encoded'> = {},
): ApiEvent<never> => restEvent({ method: 'POST', body, headers, ...extra })

/** Echoes the parsed body, so a test sees exactly what the handler would get. */
const handler = httpPipeline({ logger: fakeLogger() })
  .use(jsonBodyMiddleware())
  .handler(async (event) => jsonResponse(200, { received: event.jsonBody }))

const call = async (event: ApiEvent<never>) => {
  const response = await handler(event, lambdaContext())
  return { ...response, json: JSON.parse(response.body) as Record<string, unknown> }
}

/** A JSON object body of exactly `bytes` UTF-8 bytes. */
const bodyOfBytes = (bytes: number): string => {
  const text = `{"name":"${'x'.repeat(bytes - 11)}"}`
  expect(Buffer.byteLength(text)).toBe(bytes)
  return text
}

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64')

const expectError = (
  response: Awaited<ReturnType<typeof call>>,
  status: number,
  code: string,
): void => {
  expect(response.statusCode).toBe(status)
  expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
  expect(response.json).toMatchObject({ code, status, requestId: FIXTURE_REQUEST_ID })
  expect(typeof response.json.message).toBe('string')
}

describe('json body middleware', () => {
  it('hands a JSON object to the handler, keeping int64 values exact', async () => {
    const response = await call(postEvent('{"name":"Rex","categoryId":9223372036854775807}'))
    expect(response.statusCode).toBe(200)
    expect(response.body).toBe('{"received":{"name":"Rex","categoryId":9223372036854775807}}')
  })

  it.each(['{"name":', '{name: "Rex"}', "{'name':'Rex'}", '{"name":"Rex",}', 'Rex'])(
    'answers 400 invalid_json for the malformed body %s',
    async (body) => {
      expectError(await call(postEvent(body)), 400, 'invalid_json')
    },
  )

  it.each(['[]', '[{"name":"Rex"}]', 'null', '"Rex"', '42', 'true'])(
    'answers 400 invalid_json for the non-object body %s',
    async (body) => {
      const response = await call(postEvent(body))
      expectError(response, 400, 'invalid_json')
      expect(response.json.message).toBe('The request body must be a JSON object.')
    },
  )

  it('answers 400 invalid_json for a __proto__ member', async () => {
    expectError(await call(postEvent('{"__proto__":{"admin":true}}')), 400, 'invalid_json')
  })

  it.each([null, ''])('answers 400 invalid_json when the body is missing (%j)', async (body) => {
    const response = await call(postEvent(body))
    expectError(response, 400, 'invalid_json')
    expect(response.json.message).toBe('A JSON request body is required.')
  })

  it.each<Record<string, string>>([
    { 'Content-Type': 'text/plain' },
    { 'Content-Type': 'application/x-www-form-urlencoded' },
    { 'Content-Type': 'multipart/form-data; boundary=x' },
    { 'Content-Type': 'application/jsonp' },
    { 'Content-Type': 'text/json' },
    {},
  ])('answers 415 unsupported_media_type for %j', async (headers) => {
    expectError(await call(postEvent('{"name":"Rex"}', headers)), 415, 'unsupported_media_type')
  })

  it.each<Record<string, string>>([
    { 'Content-Type': 'application/json' },
    { 'Content-Type': 'application/json; charset=utf-8' },
    { 'Content-Type': 'application/json;charset=UTF-8' },
    { 'Content-Type': 'application/merge-patch+json' },
    { 'Content-Type': 'Application/JSON' },
    { 'content-type': 'application/json' },
    { 'CONTENT-TYPE': 'application/json' },
  ])('accepts %j', async (headers) => {
    const response = await call(postEvent('{"name":"Rex"}', headers))
    expect(response.statusCode).toBe(200)
    expect(response.json).toEqual({ received: { name: 'Rex' } })
  })

  describe('size limit of 16 KiB', () => {
    it('is 16 KiB', () => {
      expect(MAX_BODY_BYTES).toBe(16_384)
    })

    it('accepts exactly 16 KiB', async () => {
      const response = await call(postEvent(bodyOfBytes(MAX_BODY_BYTES)))
      expect(response.statusCode).toBe(200)
    })

    it('answers 413 payload_too_large for 16 KiB + 1 byte', async () => {
      expectError(await call(postEvent(bodyOfBytes(MAX_BODY_BYTES + 1))), 413, 'payload_too_large')
    })

    it('counts bytes, not characters', async () => {
      // 'é' is two bytes in UTF-8: 16,383 characters, 16,385 bytes.
      const body = `{"name":"${'é'.repeat(8187)}"}`
      expect(body.length).toBeLessThan(MAX_BODY_BYTES)
      expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES + 1)
      expectError(await call(postEvent(body)), 413, 'payload_too_large')
    })

    it('checks the size before the media type', async () => {
      const body = bodyOfBytes(MAX_BODY_BYTES + 1)
      const response = await call(postEvent(body, { 'Content-Type': 'text/plain' }))
      expectError(response, 413, 'payload_too_large')
    })
  })

  describe('base64-encoded bodies', () => {
    it('decodes the body before parsing it', async () => {
      const event = postEvent(
        base64('{"name":"Rex","categoryId":9223372036854775807}'),
        undefined,
        {
          isBase64Encoded: true,
        },
      )
      const response = await call(event)
      expect(response.statusCode).toBe(200)
      expect(response.body).toBe('{"received":{"name":"Rex","categoryId":9223372036854775807}}')
    })

    it('decodes UTF-8 text', async () => {
      const response = await call(
        postEvent(base64('{"name":"Zoë 🐶"}'), undefined, { isBase64Encoded: true }),
      )
      expect(response.json).toEqual({ received: { name: 'Zoë 🐶' } })
    })

    it.each([MAX_BODY_BYTES - 2, MAX_BODY_BYTES - 1, MAX_BODY_BYTES])(
      'accepts a decoded size of %i bytes, whatever the padding',
      async (bytes) => {
        const event = postEvent(base64(bodyOfBytes(bytes)), undefined, { isBase64Encoded: true })
        expect((await call(event)).statusCode).toBe(200)
      },
    )

    it('answers 413 when the decoded body is 16 KiB + 1 byte', async () => {
      const event = postEvent(base64(bodyOfBytes(MAX_BODY_BYTES + 1)), undefined, {
        isBase64Encoded: true,
      })
      expectError(await call(event), 413, 'payload_too_large')
    })

    it('answers 400 invalid_json when the decoded body is not JSON', async () => {
      const event = postEvent(base64('{"name":'), undefined, { isBase64Encoded: true })
      expectError(await call(event), 400, 'invalid_json')
    })
  })
})
