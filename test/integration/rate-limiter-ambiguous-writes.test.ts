import { randomUUID } from 'node:crypto'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createDocumentClient,
  type DynamoClientLimits,
  dynamoConfigFromEnv,
} from '#shared/data/dynamo-client.ts'
import { utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  AmbiguousWriteError,
  DynamoRateLimiter,
  dayItemKey,
  minuteAttribute,
  numberOf,
} from '#shared/rate-limit/rate-limiter.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { type FaultKind, type FaultProxy, startFaultProxy } from '#test/support/fault-proxy.ts'

/**
 * docs/rate-limits-and-keys.md, "Exact under slow stores": two limiter instances (two clients, as
 * two Lambda instances have) on one table behind a proxy that loses answers or fails calls. A
 * counting write whose outcome is ambiguous is sent once, never again by the SDK: a Free key's 60
 * a minute are admitted exactly, whichever instance answers and however many answers are lost;
 * a write that did not land admits one request uncounted, flagged as a store failure.
 */
/**
 * Every fault here is answered at once (a dropped connection, a 500, a 400), so no timeout is
 * needed to see one; a short one made healthy calls ambiguous on a loaded machine (300 ms at a
 * load average of 9: 8 writes flagged uncertain where 5 faults were injected). 10 s never fires
 * on a call the proxy answers.
 */
const LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  maxAttempts: 2,
  maxBackoffMs: 1_000,
}
const PLAN = { perMinute: 60, perDay: 10_000 }
/** Mid-minute, so every request of a test falls in one minute window. */
const NOW = Date.UTC(2026, 10, 27, 12, 30, 30)

let env: DynamoTestEnv
let proxy: FaultProxy
let instances: DynamoRateLimiter[]
let reader: ReturnType<typeof createDocumentClient>

beforeAll(async () => {
  env = await startDynamoTestEnv()
  proxy = await startFaultProxy(env.endpoint)
  const client = () =>
    createDocumentClient({
      ...dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: proxy.endpoint }, LIMITS),
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    })
  instances = [0, 1].map(
    () =>
      new DynamoRateLimiter({ client: client(), tableName: env.rateLimitTable, clock: () => NOW }),
  )
  reader = createDocumentClient({
    endpoint: env.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
})
afterAll(async () => {
  await proxy?.close()
  await env?.close()
})

/** 100 requests of one key, alternating between the two instances, with `faults` first. */
const run = async (kind: FaultKind, faults: number) => {
  const keyId = `k${randomUUID().slice(0, 8)}`
  proxy.setRule({
    operation: 'UpdateItem',
    matches: (body) => body.includes(env.rateLimitTable) && body.includes(keyId),
    kind,
    times: faults,
  })
  const decisions = []
  for (let i = 0; i < 100; i += 1) {
    decisions.push(await (instances[i % 2] as DynamoRateLimiter).consume(keyId, PLAN))
  }
  proxy.setRule(undefined)
  const windows = utcWindowsAt(NOW)
  const { Item } = await reader.send(
    new GetCommand({
      TableName: env.rateLimitTable,
      Key: dayItemKey(keyId, windows.dayId),
      ConsistentRead: true,
    }),
  )
  return {
    admitted: decisions.filter((decision) => decision.outcome === 'admitted').length,
    uncertain: decisions.filter((decision) => decision.storeError instanceof AmbiguousWriteError)
      .length,
    failed: decisions.filter((decision) => decision.storeError !== undefined).length,
    counted: numberOf(Item?.[minuteAttribute(windows.minuteOfDay)]),
  }
}

describe('exact limits under a store that loses answers', () => {
  it('admits exactly the plan over two instances when 20 counting writes land but lose their answers', async () => {
    const { admitted, uncertain, counted } = await run('lost-answer', 20)
    // Each of the 20 was applied once and admitted once: none counted twice.
    expect(uncertain).toBe(20)
    expect(counted).toBe(PLAN.perMinute)
    expect(admitted).toBe(PLAN.perMinute)
    expect(proxy.injected.get('lost-answer')).toBeGreaterThanOrEqual(20)
  })

  it('admits the plan plus each write that failed without landing, never fewer', async () => {
    const { admitted, uncertain, counted } = await run('server-error', 5)
    expect(uncertain).toBe(5)
    expect(counted).toBe(PLAN.perMinute)
    expect(admitted).toBe(PLAN.perMinute + 5)
  })

  it('still retries what DynamoDB refused without applying (throttling): nothing uncounted', async () => {
    const { admitted, uncertain, counted, failed } = await run('throttle', 1)
    expect(proxy.injected.get('throttle')).toBe(1)
    expect(uncertain).toBe(0)
    expect(failed).toBe(0)
    expect(counted).toBe(PLAN.perMinute)
    expect(admitted).toBe(PLAN.perMinute)
  })
})
