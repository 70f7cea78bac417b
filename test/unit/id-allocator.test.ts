import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient, NumberValue, UpdateCommand } from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { beforeEach, describe, expect, it } from 'vitest'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PET_TABLE } from '#shared/data/table-keys.ts'

const TABLE = 'unit-pets'

const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  }),
)
const dynamo = mockClient(client)

/** The counter item of the pet table; `failures` makes the next updates fail (throttled). */
let counter: { lastReservedId: number; failures: number }

beforeEach(() => {
  counter = { lastReservedId: 0, failures: 0 }
  dynamo.reset()
  dynamo.onAnyCommand().rejects(new Error('only an UpdateCommand of the counter item expected'))
  // Adds `:size` atomically after a network-like pause, and answers the new value wrapped as
  // the real client does (wrapNumbers).
  dynamo
    .on(UpdateCommand, {
      TableName: TABLE,
      Key: { [PET_TABLE.partitionKey]: PET_TABLE.idCounterKey },
    })
    .callsFake(async (input: UpdateCommand['input']) => {
      await new Promise((resolve) => setImmediate(resolve))
      if (counter.failures > 0) {
        counter.failures -= 1
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })
      }
      counter.lastReservedId += Number(input.ExpressionAttributeValues?.[':size'])
      return { Attributes: { lastReservedId: new NumberValue(String(counter.lastReservedId)) } }
    })
})

const allocatorOf = (blockSize: number): BlockIdAllocator =>
  new BlockIdAllocator({ client, tableName: TABLE, blockSize })

const sends = (): number => dynamo.calls().length

const sequentially = async (allocator: BlockIdAllocator, count: number): Promise<number[]> => {
  const ids: number[] = []
  for (let i = 0; i < count; i += 1) ids.push(await allocator.next())
  return ids
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe('block id allocator', () => {
  it('reserves nothing until the first id is asked for', () => {
    allocatorOf(50)
    expect(sends()).toBe(0)
  })

  it('hands out consecutive ids from 1 within a block, with one reservation', async () => {
    expect(await sequentially(allocatorOf(50), 5)).toEqual([1, 2, 3, 4, 5])
    expect(sends()).toBe(1)
    expect(counter.lastReservedId).toBe(50)
  })

  it('reserves a new block only when the current one is used up: 120 ids, blocks of 50 → 3 sends', async () => {
    const allocator = allocatorOf(50)
    expect(await sequentially(allocator, 50)).toEqual(range(1, 50))
    expect(sends()).toBe(1)
    expect(await allocator.next()).toBe(51)
    expect(sends()).toBe(2)
    expect(await sequentially(allocator, 69)).toEqual(range(52, 120))
    expect(sends()).toBe(3)
  })

  it('with a block size of 1, reserves once per id', async () => {
    expect(await sequentially(allocatorOf(1), 4)).toEqual([1, 2, 3, 4])
    expect(sends()).toBe(4)
  })

  it('lets concurrent callers in one instance share one reservation', async () => {
    const allocator = allocatorOf(50)
    const ids = await Promise.all(Array.from({ length: 30 }, () => allocator.next()))
    expect(sends()).toBe(1)
    expect([...ids].sort((a, b) => a - b)).toEqual(range(1, 30))
  })

  it('never duplicates ids under a burst larger than a block', async () => {
    const allocator = allocatorOf(50)
    const ids = await Promise.all(Array.from({ length: 120 }, () => allocator.next()))
    expect(new Set(ids).size).toBe(120)
    expect([...ids].sort((a, b) => a - b)).toEqual(range(1, 120))
    expect(sends()).toBe(3)
  })

  it('never lets two allocators (two Lambda instances) over one counter overlap', async () => {
    const first = allocatorOf(10)
    const second = allocatorOf(10)
    const ids = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 3 === 0 ? first : second).next()),
    )
    expect(new Set(ids).size).toBe(100)
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(1)
    // Nothing beyond what was reserved, and every id came from a reserved block.
    expect(Math.max(...ids)).toBeLessThanOrEqual(counter.lastReservedId)
  })

  it('keeps two allocators with different block sizes apart', async () => {
    const small = allocatorOf(3)
    const large = allocatorOf(50)
    expect(await small.next()).toBe(1)
    expect(await large.next()).toBe(4)
    expect(await sequentially(small, 3)).toEqual([2, 3, 54])
  })

  it('rejects every waiting caller when a reservation fails, and retries on the next call', async () => {
    const allocator = allocatorOf(50)
    counter.failures = 1
    const results = await Promise.allSettled([allocator.next(), allocator.next(), allocator.next()])
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(sends()).toBe(1)
    expect(await allocator.next()).toBe(1)
    expect(sends()).toBe(2)
  })

  it('surfaces the datastore error itself (so it can become a 503)', async () => {
    counter.failures = 1
    await expect(allocatorOf(5).next()).rejects.toMatchObject({ name: 'ThrottlingException' })
  })

  it('refuses ids at or above 2^53 instead of handing out inexact ones', async () => {
    counter.lastReservedId = Number.MAX_SAFE_INTEGER - 10
    await expect(allocatorOf(50).next()).rejects.toThrow(/invalid value/)
  })

  it('refuses a counter answer without a value', async () => {
    dynamo.on(UpdateCommand).resolves({})
    await expect(allocatorOf(5).next()).rejects.toThrow(/invalid value/)
  })

  it.each([0, -1, 1.5, Number.NaN])('refuses the block size %s', (blockSize) => {
    expect(() => allocatorOf(blockSize)).toThrow(/blockSize/)
  })
})
