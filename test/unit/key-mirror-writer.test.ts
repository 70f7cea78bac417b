import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  NumberValue,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { beforeEach, describe, expect, it } from 'vitest'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import { hashApiKey, type KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const TABLE = 'key-mirror'
const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' }))
const dynamo = mockClient(documentClient)

const entry = (n: number): KeyMirrorEntry => ({
  keyHash: hashApiKey(`key-${n}-value-0123456789abcdef`),
  keyId: `key-${n}`,
  enabled: true,
  plan: 'free',
  perMinute: 60,
  perDay: 1_000,
  usagePlanId: 'plan-free',
})

let logger: ReturnType<typeof fakeLogger>
let sleeps: number[]
const repository = () =>
  new KeyMirrorWriter({
    client: documentClient,
    tableName: TABLE,
    logger,
    sleep: async (ms) => {
      sleeps.push(ms)
    },
  })

beforeEach(() => {
  dynamo.reset()
  logger = fakeLogger()
  sleeps = []
})

describe('KeyMirrorWriter (mocked DynamoDB)', () => {
  it('gets one item by hash, eventually consistent, unwrapping the document client numbers', async () => {
    const item = { ...entry(1), syncedAt: '2027-03-05T10:00:00.000Z' }
    dynamo.on(GetCommand).resolves({
      Item: { ...item, perMinute: new NumberValue('60'), perDay: new NumberValue('1000') },
    })

    expect(await repository().get(item.keyHash)).toEqual(item)
    const input = dynamo.commandCalls(GetCommand)[0]?.args[0].input
    expect(input).toEqual({ TableName: TABLE, Key: { keyHash: item.keyHash } })
    expect(input?.ConsistentRead).toBeUndefined()
  })

  it('reads strongly consistent when asked (the authorizer asks)', async () => {
    dynamo.on(GetCommand).resolves({})

    expect(await repository().get(entry(1).keyHash, { consistent: true })).toBeUndefined()
    expect(dynamo.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: TABLE,
      Key: { keyHash: entry(1).keyHash },
      ConsistentRead: true,
    })
  })

  it.each([
    ['an unknown plan', { plan: 'gold' }],
    ['a missing key id', { keyId: undefined }],
    ['a zero limit', { perMinute: 0 }],
    ['a fractional limit', { perDay: 1.5 }],
    ['perDay below perMinute', { perMinute: 100, perDay: 10 }],
    ['a string limit', { perMinute: '60' }],
    ['a non-boolean enabled flag', { enabled: 'true' }],
    ['a bad syncedAt', { syncedAt: 'yesterday' }],
  ])('treats an item with %s as absent and logs it without the hash', async (_, change) => {
    const item = { ...entry(1), syncedAt: '2027-03-05T10:00:00.000Z', ...change }
    dynamo.on(GetCommand).resolves({ Item: item })

    expect(await repository().get(entry(1).keyHash)).toBeUndefined()
    expect(logger.warn).toHaveBeenCalledWith(
      'Ignoring malformed key mirror item',
      expect.objectContaining({ keyHashPrefix: entry(1).keyHash.slice(0, 12) }),
    )
    expect(JSON.stringify(logger.warn.mock.calls)).not.toContain(entry(1).keyHash)
  })

  it('retries UnprocessedItems with backoff until every write is done', async () => {
    const entries = Array.from({ length: 30 }, (_, i) => entry(i))
    dynamo.on(ScanCommand).resolves({ Items: [] })
    let firstBatch = true
    dynamo.on(BatchWriteCommand).callsFake(async (input) => {
      const requests = input.RequestItems[TABLE]
      if (firstBatch) {
        firstBatch = false
        return { UnprocessedItems: { [TABLE]: requests.slice(20) } }
      }
      return { UnprocessedItems: {} }
    })

    expect(await repository().replaceAll(entries, '2027-03-05T10:00:00.000Z')).toEqual({
      upserted: 30,
      written: 30,
      deleted: 0,
    })
    const sizes = dynamo
      .commandCalls(BatchWriteCommand)
      .map((call) => call.args[0].input.RequestItems?.[TABLE]?.length)
    // 25 (5 unprocessed), the 5 again, then the last 5.
    expect(sizes).toEqual([25, 5, 5])
    expect(sleeps).toEqual([50])
  })

  it('gives up after repeated UnprocessedItems so the run fails and the next one retries', async () => {
    dynamo.on(ScanCommand).resolves({ Items: [] })
    dynamo
      .on(BatchWriteCommand)
      .callsFake(async (input) => ({ UnprocessedItems: input.RequestItems }))

    await expect(repository().replaceAll([entry(1)], '2027-03-05T10:00:00.000Z')).rejects.toThrow(
      /unprocessed after 8 attempts/,
    )
    expect(sleeps).toEqual([50, 100, 200, 400, 800, 1_600, 3_200])
  })

  it('refuses two entries for one key hash', async () => {
    await expect(
      repository().replaceAll(
        [entry(1), { ...entry(1), keyId: 'key-copy' }],
        '2027-03-05T10:00:00.000Z',
      ),
    ).rejects.toThrow(/Duplicate key mirror entry key-copy/)
    expect(dynamo.calls()).toHaveLength(0)
  })
})
