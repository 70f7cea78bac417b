import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { DynamoRateLimiter, type RateLimitDecision } from '#shared/rate-limit/rate-limiter.ts'
import {
  type DynamoTestEnv,
  OLD_ITEM_READS,
  startDynamoTestEnv,
} from '#test/support/dynamo-test-env.ts'

let env: DynamoTestEnv

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

/** A clock the test moves; shared by all limiter instances of a test (like Lambda instances). */
const movableClock = (iso: string) => {
  let nowMs = Date.parse(iso)
  return {
    clock: () => nowMs,
    set: (next: string) => {
      nowMs = Date.parse(next)
    },
  }
}

/** A fresh key id per test, so tests never share counters. */
const newKeyId = () => `key-${randomUUID()}`

const limiterWith = (clock: () => number) =>
  new DynamoRateLimiter({ client: env.documentClient, tableName: env.rateLimitTable, clock })

const outcomes = (decisions: RateLimitDecision[]) => decisions.map((decision) => decision.outcome)
const count = (decisions: RateLimitDecision[], outcome: RateLimitDecision['outcome']) =>
  decisions.filter((decision) => decision.outcome === outcome).length

const sequentially = async (
  limiter: DynamoRateLimiter,
  keyId: string,
  limits: object,
  n: number,
) => {
  const decisions: RateLimitDecision[] = []
  for (let i = 0; i < n; i += 1) {
    decisions.push(await limiter.consume(keyId, limits as { perMinute: number; perDay: number }))
  }
  return decisions
}

describe('DynamoRateLimiter against DynamoDB', () => {
  it('admits exactly L of 150 concurrent requests from 4 limiter instances (L = 60)', async () => {
    const time = movableClock('2026-03-14T10:00:05Z')
    const limiters = Array.from({ length: 4 }, () => limiterWith(time.clock))
    const keyId = newKeyId()
    const limits = { perMinute: 60, perDay: 1_000 }
    const decisions = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        (limiters[i % limiters.length] as DynamoRateLimiter).consume(keyId, limits),
      ),
    )
    const admitted = decisions.filter((decision) => decision.outcome === 'admitted')
    expect(admitted).toHaveLength(60)
    // Each admitted request saw its own count: remaining 59, 58, ..., 0 exactly once.
    expect(admitted.map((decision) => decision.minute.remaining).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 60 }, (_, i) => i),
    )
    for (const decision of decisions.filter((d) => d.outcome !== 'admitted')) {
      expect(['rate_limited', 'key_suspended']).toContain(decision.outcome)
      expect(decision.retryAfterSeconds).toBeGreaterThan(0)
      expect(decision.storeError).toBeUndefined()
    }
  })

  it('does not count rejected requests against the day quota, then answers quota_exceeded until midnight', async () => {
    const time = movableClock('2026-03-14T10:00:00Z')
    const limiter = limiterWith(time.clock)
    const keyId = newKeyId()
    const limits = { perMinute: 5, perDay: 12 }
    const first = await sequentially(limiter, keyId, limits, 8)
    expect(outcomes(first)).toEqual([
      ...Array(5).fill('admitted'),
      ...Array(3).fill('rate_limited'),
    ])
    expect(first[5]?.retryAfterSeconds).toBe(60)
    time.set('2026-03-14T10:01:00Z')
    const second = await sequentially(limiter, keyId, limits, 8)
    expect(count(second, 'admitted')).toBe(5)
    expect(second[4]?.day.remaining).toBe(2)
    time.set('2026-03-14T10:02:30Z')
    const third = await sequentially(limiter, keyId, limits, 7)
    expect(outcomes(third)).toEqual(['admitted', 'admitted', ...Array(5).fill('quota_exceeded')])
    const refused = third[6] as RateLimitDecision
    expect(refused.day.remaining).toBe(0)
    expect(refused.retryAfterSeconds).toBe(24 * 3600 - (10 * 3600 + 2 * 60 + 30))
    time.set('2026-03-14T23:59:59.999Z')
    expect((await limiter.consume(keyId, limits)).outcome).toBe('quota_exceeded')
    time.set('2026-03-15T00:00:00.000Z')
    const nextDay = await limiter.consume(keyId, limits)
    expect(nextDay.outcome).toBe('admitted')
    expect(nextDay.day.remaining).toBe(11)
  })

  it('resets the minute window on the minute, keeping the day count', async () => {
    const time = movableClock('2026-03-14T10:00:59.900Z')
    const limiter = limiterWith(time.clock)
    const keyId = newKeyId()
    const limits = { perMinute: 3, perDay: 100 }
    const decisions = await sequentially(limiter, keyId, limits, 4)
    expect(outcomes(decisions)).toEqual(['admitted', 'admitted', 'admitted', 'rate_limited'])
    expect(decisions[3]?.retryAfterSeconds).toBe(1)
    time.set('2026-03-14T10:01:00.000Z')
    const next = await limiter.consume(keyId, limits)
    expect(next.outcome).toBe('admitted')
    expect(next.minute.remaining).toBe(2)
    expect(next.day.remaining).toBe(96)
  })

  it('suspends a key whose rejections in one minute exceed its per-minute limit, for 15 minutes', async () => {
    const time = movableClock('2026-03-14T10:00:00Z')
    const limiter = limiterWith(time.clock)
    const keyId = newKeyId()
    const limits = { perMinute: 2, perDay: 100 }
    const decisions = await sequentially(limiter, keyId, limits, 5)
    // Two admitted, two rejections (not more than the limit), the third rejection suspends.
    expect(outcomes(decisions)).toEqual([
      'admitted',
      'admitted',
      'rate_limited',
      'rate_limited',
      'key_suspended',
    ])
    expect(decisions[4]?.retryAfterSeconds).toBe(900)

    // A fresh minute does not lift it, nor does another instance that never saw it.
    time.set('2026-03-14T10:01:00Z')
    expect(await limiter.consume(keyId, limits)).toMatchObject({
      outcome: 'key_suspended',
      retryAfterSeconds: 840,
    })
    const otherInstance = limiterWith(time.clock)
    time.set('2026-03-14T10:14:59.500Z')
    expect(await otherInstance.consume(keyId, limits)).toMatchObject({
      outcome: 'key_suspended',
      retryAfterSeconds: 1,
    })

    time.set('2026-03-14T10:15:00Z')
    for (const instance of [limiter, otherInstance]) {
      const after = await instance.consume(keyId, limits)
      expect(after.outcome).toBe('admitted')
    }
    // Requests refused while suspended were not counted as new rejections.
    expect(outcomes(await sequentially(limiter, keyId, limits, 2))).toEqual([
      'rate_limited',
      'rate_limited',
    ])
  })

  it('keeps a suspension that crosses UTC midnight on the next day', async () => {
    const time = movableClock('2026-12-31T23:55:00Z')
    const limiter = limiterWith(time.clock)
    const keyId = newKeyId()
    const limits = { perMinute: 1, perDay: 100 }
    const decisions = await sequentially(limiter, keyId, limits, 3)
    expect(outcomes(decisions)).toEqual(['admitted', 'rate_limited', 'key_suspended'])

    time.set('2027-01-01T00:05:00Z')
    expect(await limiterWith(time.clock).consume(keyId, limits)).toMatchObject({
      outcome: 'key_suspended',
      retryAfterSeconds: 300,
    })
    time.set('2027-01-01T00:10:00Z')
    const after = await limiterWith(time.clock).consume(keyId, limits)
    expect(after.outcome).toBe('admitted')
    expect(after.day.remaining).toBe(99)
  })

  // Cost contract: every request pays for the limiter's DynamoDB calls (docs/performance.md,
  // "Cost estimate" counts one write per request). A new call here raises every request's bill.
  it('cost contract: one DynamoDB call per admitted request, a few per rejection, none once suspended', async () => {
    const time = movableClock('2026-03-14T12:00:00Z')
    const limiter = limiterWith(time.clock)
    const keyId = newKeyId()
    const limits = { perMinute: 1, perDay: 100 }
    const send = vi.spyOn(env.documentClient, 'send')
    const callsFor = async () => {
      send.mockClear()
      const decision = await limiter.consume(keyId, limits)
      return { outcome: decision.outcome, calls: send.mock.calls.length }
    }
    try {
      expect(await callsFor()).toEqual({ outcome: 'admitted', calls: 1 })
      // dynalite returns no item with the condition failure, so the limiter reads it.
      expect(await callsFor()).toEqual({ outcome: 'rate_limited', calls: 2 + OLD_ITEM_READS })
      expect(await callsFor()).toEqual({ outcome: 'key_suspended', calls: 3 + OLD_ITEM_READS })
      // Remembered by this instance until it ends.
      expect(await callsFor()).toEqual({ outcome: 'key_suspended', calls: 0 })
    } finally {
      send.mockRestore()
    }
  })

  it('admits the request when the store is unreachable, flagging the failure (failure policy)', async () => {
    const port = await closedPort()
    const client = createDocumentClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    })
    try {
      const limiter = new DynamoRateLimiter({
        client,
        tableName: env.rateLimitTable,
        clock: () => Date.parse('2026-03-14T10:00:00Z'),
      })
      const decision = await limiter.consume(newKeyId(), { perMinute: 60, perDay: 1_000 })
      expect(decision.outcome).toBe('admitted')
      expect(decision.storeError).toBeDefined()
      expect(decision.minute).toMatchObject({ limit: 60, remaining: 60 })
      expect(decision.day).toMatchObject({ limit: 1_000, remaining: 1_000 })
    } finally {
      client.destroy()
    }
  })
})

/** A loopback port nothing listens on. */
const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
