import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import { hashApiKey, type KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { createKeyMirrorTable } from '#test/support/key-mirror-table.ts'

let env: DynamoTestEnv
let tableName: string
let repository: KeyMirrorWriter

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})
beforeEach(async () => {
  tableName = await createKeyMirrorTable(env)
  repository = new KeyMirrorWriter({
    client: env.documentClient,
    tableName,
    logger: fakeLogger(),
  })
})

const entry = (n: number, change: Partial<KeyMirrorEntry> = {}): KeyMirrorEntry => ({
  keyHash: hashApiKey(`key-${n}-value-0123456789abcdef`),
  keyId: `key-${n}`,
  enabled: true,
  plan: 'pro',
  perMinute: 300,
  perDay: 10_000,
  usagePlanId: 'plan-pro',
  ...change,
})
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)
const T1 = '2027-03-05T10:00:00.000Z'
const T2 = '2027-03-05T10:01:00.000Z'

const tableKeyIds = async () => {
  const { Items = [] } = await env.documentClient.send(new ScanCommand({ TableName: tableName }))
  return Items.map((item) => String(item.keyId)).sort()
}

describe('KeyMirrorWriter against DynamoDB', () => {
  it('writes more than one batch of items, each readable by its hash', async () => {
    const entries = range(0, 60).map((n) => entry(n))

    expect(await repository.replaceAll(entries, T1)).toEqual({
      upserted: 60,
      written: 60,
      deleted: 0,
    })

    expect(await tableKeyIds()).toHaveLength(60)
    for (const n of [0, 24, 25, 59]) {
      expect(await repository.get(entry(n).keyHash)).toEqual({ ...entry(n), syncedAt: T1 })
    }
  })

  it('upserts the current items and deletes every item not in the run', async () => {
    await repository.replaceAll(
      range(0, 60).map((n) => entry(n)),
      T1,
    )
    // Keys 0-19 gone (deleted, disabled or detached), 20-29 moved to Business, 60-69 new.
    const next = [
      ...range(20, 30).map((n) =>
        entry(n, { plan: 'business', perMinute: 1_000, perDay: 100_000, usagePlanId: 'plan-biz' }),
      ),
      ...range(30, 70).map((n) => entry(n)),
    ]

    // Only the 10 changed and 10 new keys are written; the 30 unchanged ones are left alone.
    expect(await repository.replaceAll(next, T2)).toEqual({
      upserted: 50,
      written: 20,
      deleted: 20,
    })

    expect(await tableKeyIds()).toEqual(
      range(20, 70)
        .map((n) => `key-${n}`)
        .sort(),
    )
    expect(await repository.get(entry(5).keyHash)).toBeUndefined()
    expect(await repository.get(entry(25).keyHash)).toMatchObject({
      plan: 'business',
      perMinute: 1_000,
      usagePlanId: 'plan-biz',
      syncedAt: T2,
    })
    expect(await repository.get(entry(65).keyHash)).toMatchObject({ keyId: 'key-65', syncedAt: T2 })
    expect(await repository.get(entry(40).keyHash)).toMatchObject({ keyId: 'key-40', syncedAt: T1 })
  })

  it('empties the mirror when no key is valid any more', async () => {
    await repository.replaceAll(
      range(0, 30).map((n) => entry(n)),
      T1,
    )

    expect(await repository.replaceAll([], T2)).toEqual({ upserted: 0, written: 0, deleted: 30 })
    expect(await tableKeyIds()).toEqual([])
  })

  it('treats an item that fails the schema as absent', async () => {
    const logger = fakeLogger()
    const strict = new KeyMirrorWriter({ client: env.documentClient, tableName, logger })
    await env.documentClient.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...entry(1), plan: 'platinum', syncedAt: T1 },
      }),
    )

    expect(await strict.get(entry(1).keyHash)).toBeUndefined()
    expect(logger.warn).toHaveBeenCalledWith(
      'Ignoring malformed key mirror item',
      expect.objectContaining({ keyId: 'key-1' }),
    )
  })

  it("never takes the sync's own state item for a key, nor removes it", async () => {
    const state = new KeySyncStateRepository({ client: env.documentClient, tableName })
    await repository.replaceAll([entry(1)], T1)
    expect(await state.acquire('run-1', 0, 90_000)).toEqual({})
    await state.complete('run-1', { lastSuccessAt: 1, flushPending: false, stageIds: ['key-1'] })

    const diff = await repository.diff([])
    expect(diff).toMatchObject({ mirrorSize: 1, stale: [entry(1).keyHash] })
    expect(await repository.apply(diff, T2)).toMatchObject({ deleted: 1 })

    expect(await state.get()).toEqual({ lastSuccessAt: 1, stageIds: ['key-1'] })
  })

  it('leaves stale items in place when told to, writing the rest', async () => {
    await repository.replaceAll([entry(1), entry(2)], T1)
    const diff = await repository.diff([entry(3)])
    expect(await repository.apply(diff, T2, { remove: [] })).toEqual({
      upserted: 1,
      written: 1,
      deleted: 0,
    })
    expect(await tableKeyIds()).toEqual(['key-1', 'key-2', 'key-3'])
  })
})
