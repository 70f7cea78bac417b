import { type DynamoDBDocumentClient, NumberValue, UpdateCommand } from '@aws-sdk/lib-dynamodb'
import { describe, expect, it } from 'vitest'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PET_TABLE } from '#shared/data/table-schema.ts'

const TABLE = 'unit-pets'

/**
 * The counter item of the pet table, behind a fake document client: each UpdateCommand adds
 * `:size` atomically after a network-like pause, and answers the new value wrapped as the real
 * client does (wrapNumbers). `failures` makes the next sends fail.
 */
class FakeCounterTable {
  lastReservedId = 0
  sends = 0
  failures = 0

  readonly client = {
    send: async (command: unknown) => {
      this.sends += 1
      if (!(command instanceof UpdateCommand)) throw new Error('only UpdateCommand expected')
      const { TableName, Key, ExpressionAttributeValues } = command.input
      if (TableName !== TABLE) throw new Error(`wrong table ${TableName}`)
      if (Key?.[PET_TABLE.partitionKey] !== PET_TABLE.idCounterKey) throw new Error('wrong key')
      await new Promise((resolve) => setImmediate(resolve))
      if (this.failures > 0) {
        this.failures -= 1
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })
      }
      this.lastReservedId += Number(ExpressionAttributeValues?.[':size'])
      return { Attributes: { lastReservedId: new NumberValue(String(this.lastReservedId)) } }
    },
  } as unknown as DynamoDBDocumentClient

  allocator(blockSize: number): BlockIdAllocator {
    return new BlockIdAllocator({ client: this.client, tableName: TABLE, blockSize })
  }
}

const sequentially = async (allocator: BlockIdAllocator, count: number): Promise<number[]> => {
  const ids: number[] = []
  for (let i = 0; i < count; i += 1) ids.push(await allocator.next())
  return ids
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe('block id allocator', () => {
  it('reserves nothing until the first id is asked for', () => {
    const table = new FakeCounterTable()
    table.allocator(50)
    expect(table.sends).toBe(0)
  })

  it('hands out consecutive ids from 1 within a block, with one reservation', async () => {
    const table = new FakeCounterTable()
    expect(await sequentially(table.allocator(50), 5)).toEqual([1, 2, 3, 4, 5])
    expect(table.sends).toBe(1)
    expect(table.lastReservedId).toBe(50)
  })

  it('reserves a new block only when the current one is used up: 120 ids, blocks of 50 → 3 sends', async () => {
    const table = new FakeCounterTable()
    const allocator = table.allocator(50)
    expect(await sequentially(allocator, 50)).toEqual(range(1, 50))
    expect(table.sends).toBe(1)
    expect(await allocator.next()).toBe(51)
    expect(table.sends).toBe(2)
    expect(await sequentially(allocator, 69)).toEqual(range(52, 120))
    expect(table.sends).toBe(3)
  })

  it('with a block size of 1, reserves once per id', async () => {
    const table = new FakeCounterTable()
    expect(await sequentially(table.allocator(1), 4)).toEqual([1, 2, 3, 4])
    expect(table.sends).toBe(4)
  })

  it('lets concurrent callers in one instance share one reservation', async () => {
    const table = new FakeCounterTable()
    const allocator = table.allocator(50)
    const ids = await Promise.all(Array.from({ length: 30 }, () => allocator.next()))
    expect(table.sends).toBe(1)
    expect([...ids].sort((a, b) => a - b)).toEqual(range(1, 30))
  })

  it('never duplicates ids under a burst larger than a block', async () => {
    const table = new FakeCounterTable()
    const allocator = table.allocator(50)
    const ids = await Promise.all(Array.from({ length: 120 }, () => allocator.next()))
    expect(new Set(ids).size).toBe(120)
    expect([...ids].sort((a, b) => a - b)).toEqual(range(1, 120))
    expect(table.sends).toBe(3)
  })

  it('never lets two allocators (two Lambda instances) over one counter overlap', async () => {
    const table = new FakeCounterTable()
    const first = table.allocator(10)
    const second = table.allocator(10)
    const ids = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 3 === 0 ? first : second).next()),
    )
    expect(new Set(ids).size).toBe(100)
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(1)
    // Nothing beyond what was reserved, and every id came from a reserved block.
    expect(Math.max(...ids)).toBeLessThanOrEqual(table.lastReservedId)
  })

  it('keeps two allocators with different block sizes apart', async () => {
    const table = new FakeCounterTable()
    const small = table.allocator(3)
    const large = table.allocator(50)
    expect(await small.next()).toBe(1)
    expect(await large.next()).toBe(4)
    expect(await sequentially(small, 3)).toEqual([2, 3, 54])
  })

  it('rejects every waiting caller when a reservation fails, and retries on the next call', async () => {
    const table = new FakeCounterTable()
    const allocator = table.allocator(50)
    table.failures = 1
    const results = await Promise.allSettled([allocator.next(), allocator.next(), allocator.next()])
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(table.sends).toBe(1)
    expect(await allocator.next()).toBe(1)
    expect(table.sends).toBe(2)
  })

  it('surfaces the datastore error itself (so it can become a 503)', async () => {
    const table = new FakeCounterTable()
    table.failures = 1
    await expect(table.allocator(5).next()).rejects.toMatchObject({ name: 'ThrottlingException' })
  })

  it('refuses ids at or above 2^53 instead of handing out inexact ones', async () => {
    const table = new FakeCounterTable()
    table.lastReservedId = Number.MAX_SAFE_INTEGER - 10
    await expect(table.allocator(50).next()).rejects.toThrow(/invalid value/)
  })

  it('refuses a counter answer without a value', async () => {
    const client = { send: async () => ({}) } as unknown as DynamoDBDocumentClient
    const allocator = new BlockIdAllocator({ client, tableName: TABLE, blockSize: 5 })
    await expect(allocator.next()).rejects.toThrow(/invalid value/)
  })

  it.each([0, -1, 1.5, Number.NaN])('refuses the block size %s', (blockSize) => {
    expect(() => new FakeCounterTable().allocator(blockSize)).toThrow(/blockSize/)
  })
})
