import { Logger } from '@aws-lambda-powertools/logger'
import type { Metrics } from '@aws-lambda-powertools/metrics'
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import { MAX_AUTHORIZATION_LENGTH } from '#shared/auth/bearer-token.ts'
import type { KeyContext } from '#shared/auth/key-context.ts'
import { type KeyStore, keyFingerprint } from '#shared/auth/key-store.ts'
import { createMetrics } from '#shared/observability/metrics.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import {
  FIXTURE_API_KEY,
  FIXTURE_KEY_ID,
  lambdaContext,
  tokenAuthorizerEvent,
} from '#test/support/api-gateway-events.ts'
import { captureOutput } from '#test/support/capture-output.ts'

const CALLER: KeyContext = {
  keyId: FIXTURE_KEY_ID,
  plan: 'free',
  limits: { perMinute: 60, perDay: 1_000 },
}

/**
 * A key store that knows the fixture key and remembers what it was asked; it logs a refusal as the
 * stage's store does (stage-key-store.ts): a fingerprint, never the key.
 */
class FakeKeyStore implements KeyStore {
  readonly calls: { key: string }[] = []
  failure: Error | undefined

  async lookup(key: string): Promise<KeyContext | undefined> {
    this.calls.push({ key })
    if (this.failure) throw this.failure
    if (key === FIXTURE_API_KEY) return CALLER
    logger.info('Rejected API key', { reason: 'unknown', keyFingerprint: keyFingerprint(key) })
    return undefined
  }
}

let store: FakeKeyStore
let output: ReturnType<typeof captureOutput>
let logger: Logger
let metrics: Metrics

beforeEach(() => {
  // Event logging switched on by configuration must still never print the token.
  vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true')
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false')
  output = captureOutput()
  logger = new Logger({ serviceName: 'petstore-test', logLevel: 'DEBUG' })
  metrics = createMetrics('authorizer')
  store = new FakeKeyStore()
})

afterEach(() => {
  output.restore()
  vi.unstubAllEnvs()
})

/** The authorizer as deployed: handler plus its observability middlewares. */
const authorize = (event: APIGatewayTokenAuthorizerEvent): Promise<APIGatewayAuthorizerResult> =>
  authorizerHandler({
    keyStore: store,
    logger,
    observability: authorizerObservabilityMiddlewares({ logger, metrics }),
  })(event, lambdaContext('petstore-authorizer'))

const expectUnauthorized = async (authorizationToken: string) => {
  const result = authorize(tokenAuthorizerEvent({ authorizationToken }))
  await expect(result).rejects.toThrow(new Error('Unauthorized'))
  await expect(result).rejects.toSatisfy((error: Error) => error.message === 'Unauthorized')
}

describe('TOKEN authorizer fed with the API Gateway fixture', () => {
  it('allows a valid key for the whole stage, with the key for metering and its context', async () => {
    const result = await authorize(tokenAuthorizerEvent())
    expect(result).toEqual({
      principalId: FIXTURE_KEY_ID,
      usageIdentifierKey: FIXTURE_API_KEY,
      context: { keyId: FIXTURE_KEY_ID, plan: 'free', perMinute: 60, perDay: 1_000 },
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Action: 'execute-api:Invoke',
            Effect: 'Allow',
            Resource: 'arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/production/*',
          },
        ],
      },
    })
    // The store checks plans of the stage named by the methodArn.
    expect(store.calls).toEqual([{ key: FIXTURE_API_KEY }])
  })

  it('accepts a lowercase scheme and extra spaces after it', async () => {
    for (const header of [`bearer ${FIXTURE_API_KEY}`, `BEARER    ${FIXTURE_API_KEY}`]) {
      await expect(
        authorize(tokenAuthorizerEvent({ authorizationToken: header })),
      ).resolves.toMatchObject({ usageIdentifierKey: FIXTURE_API_KEY })
    }
  })

  it('rejects a missing or malformed header with exactly "Unauthorized", without a lookup', async () => {
    for (const header of [
      '',
      FIXTURE_API_KEY,
      `Basic ${FIXTURE_API_KEY}`,
      'Bearer',
      'Bearer ',
      `Bearer ${FIXTURE_API_KEY} extra`,
      `Bearer\t${FIXTURE_API_KEY}`,
      'Bearer short-token',
      `Bearer ${FIXTURE_API_KEY}"`,
      // The gateway's pattern refuses these before the authorizer; HTTP parsing strips such
      // white space anyway, so the authorizer agrees with the pattern instead of trimming.
      `  Bearer  ${FIXTURE_API_KEY}  `,
      `Bearer ${FIXTURE_API_KEY}\n`,
    ]) {
      await expectUnauthorized(header)
    }
    await expect(
      authorize({ ...tokenAuthorizerEvent(), authorizationToken: undefined as unknown as string }),
    ).rejects.toThrow(/^Unauthorized$/)
    expect(store.calls).toEqual([])
  })

  it('rejects an oversized header without asking the key store', async () => {
    await expectUnauthorized(`Bearer ${'a'.repeat(MAX_AUTHORIZATION_LENGTH)}`)
    expect(store.calls).toEqual([])
  })

  it('rejects an unknown key with exactly "Unauthorized"', async () => {
    await expectUnauthorized('Bearer unknown-key-0123456789abcdef0123')
    expect(store.calls).toHaveLength(1)
  })

  it('lets a key store failure through as another error, so API Gateway answers 500', async () => {
    store.failure = new Error('API Gateway key snapshot unavailable')
    await expect(authorize(tokenAuthorizerEvent())).rejects.toThrow(/snapshot unavailable/)
  })

  it('never writes the key to the logs or metrics, whatever the outcome', async () => {
    await authorize(tokenAuthorizerEvent())
    await authorize(
      tokenAuthorizerEvent({ authorizationToken: `bearer ${FIXTURE_API_KEY}x` }),
    ).catch(() => undefined)
    await authorize(tokenAuthorizerEvent({ authorizationToken: 'Bearer tiny' })).catch(
      () => undefined,
    )
    store.failure = new Error('boom')
    await authorize(tokenAuthorizerEvent()).catch(() => undefined)

    const text = output.text()
    const records = output.records()
    // Something was written: the rejection logs and the EMF metrics.
    expect(records).toContainEqual(expect.objectContaining({ message: 'Rejected API key' }))
    expect(records).toContainEqual(expect.objectContaining({ _aws: expect.anything() }))
    expect(text).not.toContain(FIXTURE_API_KEY)
    expect(text).not.toContain('fixture-key')
    // The rejection is logged with a fingerprint and the Lambda context instead.
    const rejected = records.find((record) => record.message === 'Rejected API key')
    expect(rejected).toMatchObject({
      keyFingerprint: expect.stringMatching(/^[0-9a-f]{12}$/),
      operation: 'authorizer',
      function_request_id: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
    })
  })

  it('counts allowed, denied and failed authorizations', async () => {
    await authorize(tokenAuthorizerEvent())
    await authorize(tokenAuthorizerEvent({ authorizationToken: 'Bearer nope' })).catch(
      () => undefined,
    )
    store.failure = new Error('boom')
    await authorize(tokenAuthorizerEvent()).catch(() => undefined)

    const emf = output.records().filter((record) => 'AuthorizerAllowed' in record)
    expect(
      emf.map((record) => [
        record.AuthorizerAllowed,
        record.AuthorizerDenied,
        record.AuthorizerErrors,
      ]),
    ).toEqual([
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
    ])
    expect(emf.map((record) => record.operation)).toEqual(emf.map(() => 'authorizer'))
  })

  it('publishes per version only its failures to decide, never a denial (the rollout gate)', async () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_VERSION', '7')
    await authorize(tokenAuthorizerEvent())
    await authorize(tokenAuthorizerEvent({ authorizationToken: 'Bearer nope' })).catch(
      () => undefined,
    )
    await authorize(tokenAuthorizerEvent({ authorizationToken: `Bearer ${'x'.repeat(40)}` })).catch(
      () => undefined,
    )
    store.failure = new Error('boom')
    await authorize(tokenAuthorizerEvent()).catch(() => undefined)

    const perVersion = output.records().filter((record) => 'functionVersion' in record)
    expect(perVersion.map((record) => record.AuthorizerErrors)).toEqual([0, 0, 0, 1])
    for (const record of perVersion) {
      expect(record).toMatchObject({ functionVersion: '7', operation: 'authorizer' })
      expect(record._aws).toMatchObject({
        CloudWatchMetrics: [
          {
            Dimensions: [['service', 'operation', 'functionVersion']],
            Metrics: [{ Name: 'AuthorizerErrors', Unit: 'Count' }],
          },
        ],
      })
    }
  })
})
