import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  LOCAL_TABLES,
  localFunctionEnvironment,
  localTableNames,
} from '#local/local-environment.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import {
  CLIENT_LIMITS_VARIABLE,
  createDocumentClient,
  DYNAMO_CLIENT_LIMITS,
  dynamoConfigFromEnv,
  IN_PROCESS_CLIENT_LIMITS,
  worstCaseCallMs,
} from '#shared/data/dynamo-client.ts'
import { TEST_MAC_SECRETS, TEST_POOL_KEY } from '#test/support/test-key-store.ts'

/** The function timeouts the CDK stack deploys. */
const AUTHORIZER_TIMEOUT_MS = FUNCTION_TIMEOUT_SECONDS.authorizer * 1_000
const PET_FUNCTION_TIMEOUT_MS =
  Math.min(
    FUNCTION_TIMEOUT_SECONDS.listPets,
    FUNCTION_TIMEOUT_SECONDS.createPet,
    FUNCTION_TIMEOUT_SECONDS.getPet,
  ) * 1_000

/** The part of the SDK's retry strategy (RetryStrategyV2) the backoff check drives. */
interface RetryStrategyLike {
  acquireInitialRetryToken(scope: string): Promise<unknown>
  refreshRetryTokenForRetry(token: unknown, info: { errorType: string }): Promise<unknown>
}

afterEach(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
})

describe('DynamoDB client limits', () => {
  it('lets every attempt of a stalled call time out well inside the shortest function timeout', () => {
    expect(worstCaseCallMs()).toBe(3_000)
    // "Well inside": a second of headroom for the rest of the invocation.
    expect(worstCaseCallMs()).toBeLessThanOrEqual(AUTHORIZER_TIMEOUT_MS - 1_000)
    // The longest path that can still answer makes three calls in a row (limiter, id block, put).
    expect(3 * worstCaseCallMs()).toBeLessThan(PET_FUNCTION_TIMEOUT_MS)
    // The connection timeout runs inside the request timeout, never after it.
    expect(DYNAMO_CLIENT_LIMITS.connectionTimeoutMs).toBeLessThan(
      DYNAMO_CLIENT_LIMITS.requestTimeoutMs,
    )
  })

  it('gives the SDK client those limits and the configured endpoint', async () => {
    const config = dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' })
    expect(config).toMatchObject({
      endpoint: 'http://127.0.0.1:8000',
      maxAttempts: DYNAMO_CLIENT_LIMITS.maxAttempts,
      requestHandler: {
        connectionTimeout: DYNAMO_CLIENT_LIMITS.connectionTimeoutMs,
        requestTimeout: DYNAMO_CLIENT_LIMITS.requestTimeoutMs,
        throwOnRequestTimeout: true,
      },
    })
    expect(dynamoConfigFromEnv({})).not.toHaveProperty('endpoint')
    const client = createDocumentClient({ ...config, region: 'us-east-1' })
    expect(await client.config.maxAttempts()).toBe(2)
  })

  it.each([
    ['THROTTLING', DYNAMO_CLIENT_LIMITS.maxBackoffMs],
    ['TRANSIENT', 25],
  ] as const)(
    'matches the SDK backoff the arithmetic assumes (%s: at most %i ms before the retry)',
    async (errorType, maxDelayMs) => {
      vi.useFakeTimers()
      vi.spyOn(Math, 'random').mockReturnValue(0.999_999)
      const client = createDocumentClient({ ...dynamoConfigFromEnv({}), region: 'us-east-1' })
      const strategy = (await client.config.retryStrategy()) as unknown as RetryStrategyLike
      const token = await strategy.acquireInitialRetryToken('dynamodb')
      const startedAt = Date.now()
      const retry = strategy.refreshRetryTokenForRetry(token, { errorType })
      await vi.runAllTimersAsync()
      await retry
      const waitedMs = Date.now() - startedAt
      expect(waitedMs).toBeLessThanOrEqual(maxDelayMs)
      // The throttling wait is the one in the worst case: it must be what the arithmetic says.
      if (errorType === 'THROTTLING') expect(waitedMs).toBeGreaterThan(maxDelayMs * 0.99)
      client.destroy()
    },
  )
})

describe('DynamoDB client limits of the local server', () => {
  const local = {
    endpoint: 'http://127.0.0.1:8000',
    cursorSecret: 'c'.repeat(64),
    macSecrets: TEST_MAC_SECRETS,
    poolKey: TEST_POOL_KEY,
    tables: LOCAL_TABLES,
  }

  it('gives the functions in-process limits with the embedded DynamoDB, the AWS limits otherwise', () => {
    const embedded = localFunctionEnvironment({ ...local, embedded: true }, {})
    expect(dynamoConfigFromEnv(embedded)).toMatchObject({
      maxAttempts: IN_PROCESS_CLIENT_LIMITS.maxAttempts,
      requestHandler: {
        connectionTimeout: IN_PROCESS_CLIENT_LIMITS.connectionTimeoutMs,
        requestTimeout: IN_PROCESS_CLIENT_LIMITS.requestTimeoutMs,
      },
    })
    // DynamoDB Local or AWS behind DYNAMODB_ENDPOINT is a network service that can stall.
    const external = localFunctionEnvironment({ ...local, embedded: false }, {})
    expect(external).not.toHaveProperty(CLIENT_LIMITS_VARIABLE)
    expect(dynamoConfigFromEnv(external)).toMatchObject({
      requestHandler: { requestTimeout: DYNAMO_CLIENT_LIMITS.requestTimeoutMs },
    })
  })

  it('fails the cold start on a value it does not know', () => {
    expect(() => dynamoConfigFromEnv({ [CLIENT_LIMITS_VARIABLE]: 'fast' })).toThrow(
      `${CLIENT_LIMITS_VARIABLE} must be "in-process", "no-deadline" or unset, got "fast"`,
    )
  })

  it("gives the bench's counting runs no deadline that could fire (0 turns the SDK's timers off)", () => {
    expect(dynamoConfigFromEnv({ [CLIENT_LIMITS_VARIABLE]: 'no-deadline' })).toMatchObject({
      maxAttempts: DYNAMO_CLIENT_LIMITS.maxAttempts,
      requestHandler: { connectionTimeout: 0, requestTimeout: 0 },
    })
  })
})

describe('the local tables', () => {
  it('are fixed for the embedded DynamoDB; on a shared endpoint, the mirror is one per data directory', () => {
    expect(localTableNames('.petstore', true)).toEqual(LOCAL_TABLES)
    const a = localTableNames('/tmp/a', false)
    expect(a.keyMirror).toMatch(/^petstore-local-key-mirror-[0-9a-f]{12}$/)
    expect(a.pets).toBe(LOCAL_TABLES.pets)
    expect(localTableNames('/tmp/a', false)).toEqual(a)
    expect(localTableNames('/tmp/b', false).keyMirror).not.toBe(a.keyMirror)
  })

  it("are the process's own with the data in memory on a shared endpoint: every table starts empty", () => {
    const first = localTableNames(':memory:', false)
    const second = localTableNames(':memory:', false)
    for (const table of Object.keys(LOCAL_TABLES) as (keyof typeof LOCAL_TABLES)[]) {
      expect(first[table]).toMatch(new RegExp(`^${LOCAL_TABLES[table]}-[0-9a-f]{12}$`))
      expect(second[table]).not.toBe(first[table])
    }
  })
})
