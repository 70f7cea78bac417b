import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StoreKeyNotFound, StoreKeyRepository } from '#keys/store-key-repository.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { createStoreKeyTable } from '#test/support/key-mirror-table.ts'

let env: DynamoTestEnv
let keys: StoreKeyRepository

const item = (n: number, change: Partial<StoreKeyItem> = {}): StoreKeyItem => ({
  keyId: `s-${String(n).padStart(10, '0')}`,
  keyHash: String(n % 10).repeat(64),
  name: `key ${n}`,
  plan: n % 4 === 0 ? 'business' : 'free',
  perMinute: 60,
  perDay: 1_000,
  enabled: true,
  createdAt: '2027-03-05T10:00:00.000Z',
  macVersion: 1,
  ...change,
})

beforeAll(async () => {
  env = await startDynamoTestEnv()
  keys = new StoreKeyRepository({
    client: env.documentClient,
    tableName: await createStoreKeyTable(env),
  })
  await keys.putMany(Array.from({ length: 60 }, (_, n) => item(n)))
})
afterAll(async () => {
  await env?.close()
})

describe('StoreKeyRepository against DynamoDB', () => {
  it('makes keys in batches and reads one back by id', async () => {
    expect(await keys.get(item(7).keyId)).toEqual(item(7))
    expect(await keys.get('s-nosuchkey0')).toBeUndefined()
  })

  it('refuses a new key whose id exists: a put never overwrites', async () => {
    const error = await keys.put(item(7, { name: 'other' })).catch((caught: unknown) => caught)
    expect(isConditionFailure(error)).toBe(true)
    expect((await keys.get(item(7).keyId))?.name).toBe('key 7')
  })

  it('changes a key that exists (state, plan, a rotation end) and never brings one back', async () => {
    const changed = await keys.change(item(8).keyId, {
      enabled: false,
      plan: { plan: 'enterprise', perMinute: 20, perDay: 30, customer: 'acme' },
      disableAfter: '2027-03-06T10:00:00.000Z',
    })
    expect(changed).toMatchObject({
      enabled: false,
      plan: 'enterprise',
      customer: 'acme',
      perDay: 30,
    })
    const back = await keys.change(item(8).keyId, {
      plan: { plan: 'pro', perMinute: 300, perDay: 10_000 },
      disableAfter: null,
    })
    expect(back.customer).toBeUndefined()
    expect(back.disableAfter).toBeUndefined()
    expect(await keys.delete(item(9).keyId)).toBe(true)
    expect(await keys.delete(item(9).keyId)).toBe(false)
    await expect(keys.change(item(9).keyId, { enabled: true })).rejects.toThrow(StoreKeyNotFound)
    expect(await keys.get(item(9).keyId)).toBeUndefined()
  })

  it('lists a page at a time, every key once, and filters by plan', async () => {
    const seen: string[] = []
    let after: string | undefined
    do {
      const page = await keys.page({ limit: 7, after })
      expect(page.items.length).toBeLessThanOrEqual(7)
      seen.push(...page.items.map((key) => key.keyId))
      after = page.next
    } while (after !== undefined)
    expect(seen).toHaveLength(59)
    expect(new Set(seen).size).toBe(59)
    const business = await keys.page({ limit: 100, plan: 'business' })
    expect(business.items.every((key) => key.plan === 'business')).toBe(true)
    // 15 were made on Business; key 8 was moved to Pro above.
    expect(business.items).toHaveLength(14)
    expect(business.next).toBeUndefined()
  })
})
