import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { afterEach, describe, expect, it } from 'vitest'
import { daysBetween, daysOfMonth, KeyUsageRepository } from '#keys/key-usage-repository.ts'

/**
 * The usage reads' edges that a local server cannot produce: more keys than one BatchGetItem
 * takes, keys DynamoDB leaves unprocessed, and the calendar of a month.
 */
const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  }),
)
const dynamo = mockClient(client)
afterEach(() => dynamo.reset())

const TABLE = 'rate-limits'
const repository = new KeyUsageRepository({ client, tableName: TABLE, clock: () => 0 })

describe('KeyUsageRepository', () => {
  it('reads 250 keys in batches of 100 and asks again for what DynamoDB left unprocessed', async () => {
    const asked: string[][] = []
    dynamo
      .on(BatchGetCommand)
      .callsFake((input: { RequestItems: Record<string, { Keys: { pk: string }[] }> }) => {
        const keys = input.RequestItems[TABLE]?.Keys.map((key) => key.pk) ?? []
        asked.push(keys)
        // The first call leaves its last 10 keys unprocessed, as a throttled table does.
        const served = asked.length === 1 ? keys.slice(0, 90) : keys
        const left = asked.length === 1 ? keys.slice(90) : []
        return {
          Responses: {
            [TABLE]: served.map((pk) => ({ pk, day: Number(pk.split('-')[1]?.split('#')[0]) })),
          },
          ...(left.length
            ? { UnprocessedKeys: { [TABLE]: { Keys: left.map((pk) => ({ pk })) } } }
            : {}),
        }
      })
    const ids = Array.from({ length: 250 }, (_, n) => `key-${n}`)
    const counts = await repository.countsOn(ids, '2026-11-03')
    expect(asked.map((keys) => keys.length)).toEqual([100, 10, 100, 50])
    expect(Object.keys(counts)).toHaveLength(250)
    expect(ids.every((id, n) => counts[id] === n)).toBe(true)
  })

  it('knows the days of a month and of a range, leap days included', () => {
    expect(daysOfMonth('2028-02')).toHaveLength(29)
    expect(daysOfMonth('2026-11')?.at(-1)).toBe('2026-11-30')
    expect(daysOfMonth('2026-13')).toBeUndefined()
    expect(daysBetween('2026-12-30', '2027-01-02')).toEqual([
      '2026-12-30',
      '2026-12-31',
      '2027-01-01',
      '2027-01-02',
    ])
    expect(daysBetween('2026-11-05', '2026-11-01')).toEqual([])
  })
})
