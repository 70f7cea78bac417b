import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import {
  DynamoDBDocumentClient,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { afterEach, describe, expect, it } from 'vitest'
import { keyFingerprint } from '#shared/auth/key-store.ts'
import { PLAN_LIMITS, PLAN_NAMES, type PlanLimits } from '#shared/config/plans-config.ts'
import { MINUTE_MS } from '#shared/rate-limit/rate-limit-windows.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'

/**
 * How large the limiter's day item grows. The item is built from the updates the limiter really
 * sends (their SET, ADD and REMOVE clauses applied in order), with every count at its longest, and
 * sized as DynamoDB bills it: attribute name bytes plus value bytes, a string its UTF-8 bytes, a
 * number 1 byte per two significant digits plus 1 (AWS docs, "Item sizes and formats").
 */
const ITEM_BOUND_BYTES = 1_508
const WRITE_UNIT_BYTES = 1_024
const DAY_START = Date.UTC(2026, 10, 22)
const MINUTES_PER_DAY = 1_440
/** A local key id (12 hex characters); API Gateway's key ids are shorter. */
const KEY_ID = keyFingerprint('any key')

const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  }),
)
const dynamo = mockClient(client)
afterEach(() => dynamo.reset())

const numberBytes = (value: number) =>
  Math.ceil(String(Math.abs(value)).replace(/0+$/, '').length / 2) + 1
const itemBytes = (item: Record<string, string | number>) =>
  Object.entries(item).reduce(
    (sum, [name, value]) =>
      sum +
      Buffer.byteLength(name) +
      (typeof value === 'string' ? Buffer.byteLength(value) : numberBytes(value)),
    0,
  )

/**
 * One key's day item after a write at each of `minutes` (of the day): each an admitted request,
 * and with `refusals` also a refused one that counts a rejection and starts a suspension.
 */
const dayItem = async (limits: PlanLimits, minutes: number[], refusals: boolean) => {
  const item: Record<string, string | number> = {}
  /** What ADD leaves in each counter, at its longest (most significant digits) for the plan. */
  const longest: Record<string, number> = {
    '#day': limits.perDay - 1,
    '#minute': limits.perMinute - 1,
    '#rejected': limits.perMinute + 1,
  }
  let refuse = false
  dynamo.on(UpdateCommand).callsFake(async (input: UpdateCommandInput) => {
    const names = input.ExpressionAttributeNames ?? {}
    const values = input.ExpressionAttributeValues ?? {}
    if (refuse && input.ConditionExpression?.includes('#minute')) {
      refuse = false
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        Item: { [names['#minute'] as string]: { N: String(limits.perMinute) } },
      })
    }
    Object.assign(item, input.Key)
    const clauses = /^(?:ADD (.+?))?(?: ?SET (.+?))?(?: REMOVE (.+))?$/.exec(
      input.UpdateExpression ?? '',
    )
    for (const part of clauses?.[1]?.split(', ') ?? []) {
      const placeholder = part.split(' ')[0] as string
      item[names[placeholder] as string] = longest[placeholder] as number
    }
    for (const part of clauses?.[2]?.split(', ') ?? []) {
      const [placeholder, value] = part.split(' = ') as [string, string]
      item[names[placeholder] as string] = values[value] as number
    }
    for (const placeholder of clauses?.[3]?.split(', ') ?? [])
      delete item[names[placeholder] as string]
    // The counted rejection is one too many: the limiter suspends the key.
    return { Attributes: { [names['#rejected'] ?? '']: limits.perMinute + 1 } }
  })
  let now = DAY_START
  const limiter = new DynamoRateLimiter({ client, tableName: 'rate-limits', clock: () => now })
  for (const minute of minutes) {
    // 1,001 ms into the minute: a suspension end with all 13 digits significant, the longest.
    now = DAY_START + minute * MINUTE_MS + 1_001
    expect((await limiter.consume(KEY_ID, limits)).outcome).toBe('admitted')
    if (!refusals) continue
    refuse = true
    expect((await limiter.consume(KEY_ID, limits)).outcome).toBe('key_suspended')
  }
  dynamo.reset()
  return item
}

const everyMinutes = (step: number) =>
  Array.from({ length: Math.ceil(MINUTES_PER_DAY / step) }, (_, i) => i * step)
const counters = (item: Record<string, unknown>) =>
  Object.keys(item).filter((name) => /^[mr]\d{4}$/.test(name))

describe('the rate limiter day item', () => {
  it('keeps the counters of 90 minutes at most: a burst every 16 minutes outruns the 15-minute clean-up', async () => {
    const kept: number[] = []
    for (let step = 1; step <= 60; step += 1) {
      kept.push(counters(await dayItem(PLAN_LIMITS.free, everyMinutes(step), false)).length)
    }
    // A burst within 15 minutes of the last removes its counters; one 16 or more later cannot.
    expect(kept.slice(0, 15)).toEqual(Array(15).fill(1))
    expect(Math.max(...kept)).toBe(90)
    expect(kept.indexOf(90) + 1).toBe(16)
  })

  it.each(PLAN_NAMES)(
    `stays within ${ITEM_BOUND_BYTES} bytes for the %s plan, more than one write unit: each write costs 2`,
    async (plan) => {
      const limits = PLAN_LIMITS[plan]
      const item = await dayItem(limits, everyMinutes(16), true)
      expect(counters(item)).toHaveLength(180)
      expect(item).toHaveProperty('suspendedUntil')
      const bytes = itemBytes(item)
      expect(bytes).toBeLessThanOrEqual(ITEM_BOUND_BYTES)
      expect(bytes).toBeGreaterThan(WRITE_UNIT_BYTES)
      expect(Math.ceil(bytes / WRITE_UNIT_BYTES)).toBe(2)
    },
  )

  it('reaches the bound with the longest counts (the default Enterprise plan)', async () => {
    expect(itemBytes(await dayItem(PLAN_LIMITS.enterprise, everyMinutes(16), true))).toBe(
      ITEM_BOUND_BYTES,
    )
  })
})
