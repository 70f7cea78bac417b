import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { afterEach, describe, expect, it } from 'vitest'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'

/**
 * The AWS path that dynalite cannot exercise: DynamoDB returns the old item with the condition
 * failure (ReturnValuesOnConditionCheckFailure), marshalled, so no read is needed. The call counts
 * are the limiter's cost contract on AWS (docs/performance.md, "Cost estimate").
 */
const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  }),
)
const dynamo = mockClient(client)
afterEach(() => dynamo.reset())

const NOW = Date.parse('2026-03-14T10:00:30Z')
const limits = { perMinute: 60, perDay: 1_000 }
const limiter = () => new DynamoRateLimiter({ client, tableName: 'rate-limits', clock: () => NOW })
const conditionFailed = (item: Record<string, { N: string }>) =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    Item: item,
  })

describe('DynamoRateLimiter with DynamoDB returning the old item on a condition failure', () => {
  it('classifies a minute-limit rejection from the returned item and counts it (cost contract: 2 calls, no read)', async () => {
    dynamo
      .on(UpdateCommand)
      .rejectsOnce(conditionFailed({ day: { N: '300' }, m1000: { N: '60' } }))
      .resolvesOnce({ Attributes: { r1000: 1 } })
    const decision = await limiter().consume('key-a', limits)
    expect(decision).toMatchObject({ outcome: 'rate_limited', retryAfterSeconds: 30 })
    expect(decision.day.remaining).toBe(700)
    expect(dynamo.commandCalls(GetCommand)).toHaveLength(0)
    expect(dynamo.commandCalls(UpdateCommand)).toHaveLength(2)
    const first = dynamo.commandCalls(UpdateCommand)[0]?.args[0].input
    expect(first?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD')
  })

  it('answers a suspended key from the returned item (cost contract: 1 call, then none from memory)', async () => {
    const until = NOW + 600_000
    dynamo
      .on(UpdateCommand)
      .rejects(conditionFailed({ day: { N: '5' }, suspendedUntil: { N: String(until) } }))
    const instance = limiter()
    expect(await instance.consume('key-b', limits)).toMatchObject({
      outcome: 'key_suspended',
      retryAfterSeconds: 600,
    })
    expect(await instance.consume('key-b', limits)).toMatchObject({ outcome: 'key_suspended' })
    expect(dynamo.calls()).toHaveLength(1)
  })

  it('answers quota_exceeded when the day is used up, until midnight', async () => {
    dynamo
      .on(UpdateCommand)
      .rejectsOnce(conditionFailed({ day: { N: '1000' }, m1000: { N: '3' } }))
      .resolvesOnce({ Attributes: { r1000: 1 } })
    expect(await limiter().consume('key-c', limits)).toMatchObject({
      outcome: 'quota_exceeded',
      retryAfterSeconds: 14 * 3600 - 30,
    })
  })

  it('still rejects when counting the rejection fails, flagging the store failure', async () => {
    dynamo
      .on(UpdateCommand)
      .rejectsOnce(conditionFailed({ day: { N: '10' }, m1000: { N: '60' } }))
      .rejectsOnce(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }))
    const decision = await limiter().consume('key-d', limits)
    expect(decision.outcome).toBe('rate_limited')
    expect(decision.storeError).toBeDefined()
  })
})
