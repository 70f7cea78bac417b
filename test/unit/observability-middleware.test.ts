import { Logger } from '@aws-lambda-powertools/logger'
import type { Metrics } from '@aws-lambda-powertools/metrics'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { HttpError } from '#shared/errors/http-error.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import type { ApiEvent, ApiMiddleware } from '#shared/http/http-types.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { createMetrics, HTTP_METRICS } from '#shared/observability/metrics.ts'
import { observabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import {
  FIXTURE_API_KEY,
  FIXTURE_KEY_ID,
  FIXTURE_REQUEST_ID,
  lambdaContext,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { captureOutput } from '#test/support/capture-output.ts'

let output: ReturnType<typeof captureOutput>
let logger: Logger
let metrics: Metrics

beforeEach(() => {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false')
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'Petstore/test')
  vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true')
  // What the Lambda runtime sets; Powertools reports cold starts only then.
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand')
  output = captureOutput()
  logger = new Logger({ serviceName: 'petstore-test', logLevel: 'INFO' })
  metrics = createMetrics('listPets')
})

afterEach(() => {
  output.restore()
  vi.unstubAllEnvs()
})

type Outcome = (event: ApiEvent<never>) => Promise<ReturnType<typeof jsonResponse>>

/** A tiny operation on the shared pipeline, with the observability middlewares in their slot. */
const operation = (outcome: Outcome, rateLimit?: ApiMiddleware<never>) =>
  httpPipeline<never>({
    logger,
    observability: observabilityMiddlewares('listPets', { logger, metrics }),
    ...(rateLimit ? { rateLimit } : {}),
  }).handler(outcome)

const call = (
  outcome: Outcome,
  options: { rateLimit?: ApiMiddleware<never>; authorized?: boolean } = {},
) =>
  operation(outcome, options.rateLimit)(
    restEvent({ authorized: options.authorized ?? true }),
    lambdaContext('petstore-list-pets'),
  )

const emfRecords = () => output.records().filter((record) => '_aws' in record)
const httpCounts = () =>
  emfRecords()
    .filter((record) => HTTP_METRICS.clientErrors in record)
    .map((record) => ({
      status4xx: record.Http4xx,
      status5xx: record.Http5xx,
      status429: record.Http429,
    }))

describe('observability middlewares in the HTTP pipeline', () => {
  it('publishes zero error counts for a success, with the service and operation dimensions', async () => {
    const response = await call(async () => jsonResponse(200, []))
    expect(response.statusCode).toBe(200)
    expect(httpCounts()).toEqual([{ status4xx: 0, status5xx: 0, status429: 0 }])
    const [record] = emfRecords().filter((entry) => HTTP_METRICS.clientErrors in entry)
    expect(record).toMatchObject({ service: 'petstore', operation: 'listPets' })
    expect(record?._aws).toMatchObject({
      CloudWatchMetrics: [
        {
          Namespace: 'Petstore/test',
          Dimensions: [['service', 'operation']],
          Metrics: expect.arrayContaining([
            { Name: 'Http4xx', Unit: 'Count' },
            { Name: 'Http5xx', Unit: 'Count' },
            { Name: 'Http429', Unit: 'Count' },
          ]),
        },
      ],
    })
  })

  it('counts a 4xx rendered by the error handler, so it runs after the error handler', async () => {
    const response = await call(async () => {
      throw new HttpError('pet_not_found')
    })
    // The response is the error handler's, untouched.
    expect(response.statusCode).toBe(404)
    expect(JSON.parse(response.body)).toMatchObject({ code: 'pet_not_found', status: 404 })
    expect(httpCounts()).toEqual([{ status4xx: 1, status5xx: 0, status429: 0 }])
  })

  it('counts an unexpected error as the 5xx the client received', async () => {
    const response = await call(async () => {
      throw new Error('database exploded')
    })
    expect(response.statusCode).toBe(500)
    expect(JSON.parse(response.body)).toMatchObject({ code: 'internal_error' })
    expect(httpCounts()).toEqual([{ status4xx: 0, status5xx: 1, status429: 0 }])
  })

  it('counts a 429 from the rate-limit slot as both a 4xx and a 429', async () => {
    const handler = vi.fn(async () => jsonResponse(200, []))
    const limiter: ApiMiddleware<never> = {
      before: () => {
        throw new HttpError('rate_limited', { headers: { 'Retry-After': '7' } })
      },
    }
    const response = await call(handler, { rateLimit: limiter })
    expect(response.statusCode).toBe(429)
    expect(response.headers['Retry-After']).toBe('7')
    expect(handler).not.toHaveBeenCalled()
    expect(httpCounts()).toEqual([{ status4xx: 1, status5xx: 0, status429: 1 }])
  })

  it('publishes the 5xx count per function version, apart, for rollouts to watch', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_VERSION', '12')
    await call(async () => jsonResponse(200, []))
    await call(async () => {
      throw new HttpError('pet_not_found')
    })
    await call(async () => {
      throw new Error('database exploded')
    })
    const perVersion = emfRecords().filter((record) => 'functionVersion' in record)
    expect(perVersion.map((record) => record.Http5xx)).toEqual([0, 0, 1])
    for (const record of perVersion) {
      expect(record).toMatchObject({ functionVersion: '12', operation: 'listPets' })
      // Only this metric has a series per version: the others keep {service, operation}.
      expect(record).not.toHaveProperty('Http4xx')
      expect(record._aws).toMatchObject({
        CloudWatchMetrics: [{ Dimensions: [['service', 'operation', 'functionVersion']] }],
      })
    }
  })

  it('keeps the version on every per-version record of one instance, invocation after invocation', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_VERSION', '12')
    let fail = false
    const instance = operation(async () => {
      if (fail) throw new Error('database exploded')
      return jsonResponse(200, [])
    })
    for (const next of [false, true, false]) {
      fail = next
      await instance(restEvent({ authorized: true }), lambdaContext('petstore-list-pets'))
    }
    const perVersion = emfRecords().filter(
      (record) => 'Http5xx' in record && !('Http4xx' in record),
    )
    expect(perVersion.map((record) => [record.functionVersion, record.Http5xx])).toEqual([
      ['12', 0],
      ['12', 1],
      ['12', 0],
    ])
  })

  it('publishes the ColdStart metric on the first invocation only', async () => {
    await call(async () => jsonResponse(200, []))
    await call(async () => jsonResponse(200, []))
    const coldStarts = emfRecords().filter((record) => 'ColdStart' in record)
    expect(coldStarts).toHaveLength(1)
    expect(coldStarts[0]).toMatchObject({
      ColdStart: 1,
      service: 'petstore',
      operation: 'listPets',
      function_name: 'petstore-list-pets',
    })
    expect(httpCounts()).toHaveLength(2)
  })

  it('logs with the request id, operation and key id, never the key or the event', async () => {
    await call(async () => {
      logger.info('Listing pets')
      throw new Error('unexpected')
    })
    const records = output.records().filter((record) => !('_aws' in record))
    const listing = records.find((record) => record.message === 'Listing pets')
    const failure = records.find((record) => record.message === 'Unhandled error')
    for (const record of [listing, failure]) {
      expect(record).toMatchObject({
        operation: 'listPets',
        keyId: FIXTURE_KEY_ID,
        plan: 'free',
        correlation_id: FIXTURE_REQUEST_ID,
        function_request_id: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
        function_name: 'petstore-list-pets',
      })
    }
    expect(records).not.toContainEqual(
      expect.objectContaining({ message: 'Lambda invocation event' }),
    )
    expect(output.text()).not.toContain(FIXTURE_API_KEY)
  })

  it('does not carry one caller key id into the next invocation', async () => {
    await call(async () => jsonResponse(200, []))
    output.clear()
    await call(
      async () => {
        logger.info('Anonymous call')
        return jsonResponse(200, [])
      },
      { authorized: false },
    )
    const record = output.records().find((entry) => entry.message === 'Anonymous call')
    expect(record).toMatchObject({ operation: 'listPets' })
    expect(record).not.toHaveProperty('keyId')
  })
})
