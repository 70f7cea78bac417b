import { describe, expect, it } from 'vitest'
import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { JSON_CONTENT_TYPE } from '#shared/http/http-response.ts'
import type { ApiEvent } from '#shared/http/http-types.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import {
  lambdaContext,
  FIXTURE_REQUEST_ID as REQUEST_ID,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/** Runs a handler that throws `thrown` through the shared pipeline. */
const respondTo = async (thrown: unknown, event: ApiEvent<never> = restEvent()) => {
  const logger = fakeLogger()
  const handler = httpPipeline({ logger }).handler(async () => {
    throw thrown
  })
  const response = await handler(event, lambdaContext('petstore-test', 'lambda-request-id'))
  return { ...response, json: JSON.parse(response.body) as Record<string, unknown>, logger }
}

const throttled = (): Error =>
  Object.assign(new Error('Throughput exceeds the current capacity of table prod-pets-7f3a'), {
    name: 'ProvisionedThroughputExceededException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400, requestId: 'DDB-REQ' },
  })

describe('error handler middleware', () => {
  it.each(Object.keys(ERROR_STATUS) as ErrorCode[])(
    'renders HttpError %s as an Error body whose status is the HTTP status',
    async (code) => {
      const response = await respondTo(new HttpError(code))
      expect(response.statusCode).toBe(ERROR_STATUS[code])
      expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
      expect(response.json).toStrictEqual({
        code,
        message: ERROR_MESSAGES[code],
        status: ERROR_STATUS[code],
        requestId: REQUEST_ID,
      })
    },
  )

  it('keeps a thrown HttpError’s message, details and headers', async () => {
    const error = new HttpError('rate_limited', {
      message: 'Slow down.',
      headers: { ...retryAfterHeaders(37), 'X-Extra': 'yes' },
    })
    const response = await respondTo(error)
    expect(response.statusCode).toBe(429)
    expect(response.headers).toMatchObject({ 'Retry-After': '37', 'X-Extra': 'yes' })
    expect(response.json).toStrictEqual({
      code: 'rate_limited',
      message: 'Slow down.',
      status: 429,
      requestId: REQUEST_ID,
    })
  })

  it('keeps validation details', async () => {
    const details = [
      { field: 'name', message: 'is required' },
      { field: 'limit', message: 'must be an integer from 1 to 100' },
    ]
    const response = await respondTo(new HttpError('validation_failed', { details }))
    expect(response.statusCode).toBe(400)
    expect(response.json.details).toStrictEqual(details)
  })

  it('does not log client errors as failures', async () => {
    const response = await respondTo(new HttpError('pet_not_found'))
    expect(response.logger.error).not.toHaveBeenCalled()
  })

  describe('an unexpected Error', () => {
    const secret = new Error('Cannot read properties of undefined (table prod-pets-7f3a)')

    it('becomes 500 internal_error with the generic message only', async () => {
      const response = await respondTo(secret)
      expect(response.statusCode).toBe(500)
      expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
      expect(response.json).toStrictEqual({
        code: 'internal_error',
        message: ERROR_MESSAGES.internal_error,
        status: 500,
        requestId: REQUEST_ID,
      })
    })

    it('leaks no stack, internal message or table name', async () => {
      const { body } = await respondTo(secret)
      expect(body).not.toContain('prod-pets')
      expect(body).not.toContain('Cannot read')
      expect(body).not.toContain('stack')
      expect(body).not.toContain('.ts:')
    })

    it('is logged once, with the error and the request id', async () => {
      const { logger } = await respondTo(secret)
      expect(logger.error).toHaveBeenCalledTimes(1)
      expect(logger.error).toHaveBeenCalledWith(expect.any(String), {
        error: secret,
        requestId: REQUEST_ID,
      })
    })

    it.each([
      ['a string', 'boom'],
      ['undefined', undefined],
      ['a plain object', { reason: 'boom' }],
    ])('also applies when %s is thrown', async (_label, thrown) => {
      const response = await respondTo(thrown)
      expect(response.statusCode).toBe(500)
      expect(response.json.code).toBe('internal_error')
      expect(response.logger.error).toHaveBeenCalledTimes(1)
    })
  })

  describe('the datastore failing', () => {
    it.each([
      ['a throttling error', throttled()],
      ['a plain object named ThrottlingException', { name: 'ThrottlingException' }],
      ['RequestLimitExceeded', Object.assign(new Error('x'), { name: 'RequestLimitExceeded' })],
      ['a DynamoDB 5xx', Object.assign(new Error('x'), { $metadata: { httpStatusCode: 500 } })],
      ['a reset connection', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
      ['a refused connection', Object.assign(new Error('x'), { code: 'ECONNREFUSED' })],
      ['an SDK timeout', Object.assign(new Error('x'), { name: 'TimeoutError' })],
      ['InternalServerError without metadata', { name: 'InternalServerError' }],
    ])('becomes 503 service_unavailable with Retry-After for %s', async (_label, thrown) => {
      const response = await respondTo(thrown)
      expect(response.statusCode).toBe(503)
      expect(response.headers['Content-Type']).toBe(JSON_CONTENT_TYPE)
      expect(response.headers['Retry-After']).toMatch(/^[1-9]\d*$/)
      expect(response.json).toStrictEqual({
        code: 'service_unavailable',
        message: ERROR_MESSAGES.service_unavailable,
        status: 503,
        requestId: REQUEST_ID,
      })
    })

    it('leaks no table name and is logged as a warning', async () => {
      const error = throttled()
      const response = await respondTo(error)
      expect(response.body).not.toContain('prod-pets')
      expect(response.body).not.toContain('Throughput')
      expect(response.logger.warn).toHaveBeenCalledWith(expect.any(String), {
        error,
        requestId: REQUEST_ID,
      })
      expect(response.logger.error).not.toHaveBeenCalled()
    })

    it('is not confused with a client error of the datastore', async () => {
      const conditional = Object.assign(new Error('The conditional request failed'), {
        name: 'ConditionalCheckFailedException',
        $metadata: { httpStatusCode: 400 },
      })
      const response = await respondTo(conditional)
      expect(response.statusCode).toBe(500)
      expect(response.json.code).toBe('internal_error')
    })
  })

  describe('request id', () => {
    it('comes from requestContext.requestId', async () => {
      const response = await respondTo(new HttpError('gone'))
      expect(response.json.requestId).toBe(REQUEST_ID)
    })

    it('falls back to the Lambda request id when the event has none', async () => {
      const event = { ...restEvent(), requestContext: undefined } as unknown as ApiEvent<never>
      const response = await respondTo(new HttpError('gone'), event)
      expect(response.json.requestId).toBe('lambda-request-id')
    })
  })
})
