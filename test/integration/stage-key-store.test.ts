import { PutCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import { StageKeyStore } from '#functions/authorizer/stage-key-store.ts'
import { newProjectKey } from '#keys/api-key-value.ts'
import { StoreKeyRepository } from '#keys/store-key-repository.ts'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey, type KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { lambdaContext, tokenAuthorizerEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { createKeyMirrorTable, createStoreKeyTable } from '#test/support/key-mirror-table.ts'
import { TEST_MAC_SECRETS, TEST_POOL_KEY, testKeyStore } from '#test/support/test-key-store.ts'

let env: DynamoTestEnv
let mirrorTable: string
let store: StageKeyStore
let storeKeys: StoreKeyRepository
/** The tables read, one entry per GetItem. */
const reads: string[] = []

const SYNCED_AT = '2027-03-05T10:00:00.000Z'
const keyValue = (name: string) => `${name}-value-0123456789abcdef`

const put = (name: string, change: Partial<Record<keyof KeyMirrorItem, unknown>> = {}) =>
  env.documentClient.send(
    new PutCommand({
      TableName: mirrorTable,
      Item: {
        keyHash: hashApiKey(keyValue(name)),
        keyId: `id-${name}`,
        enabled: true,
        plan: 'enterprise',
        perMinute: 7_000,
        perDay: 2_000_000,
        usagePlanId: 'plan-acme',
        syncedAt: SYNCED_AT,
        ...change,
      },
    }),
  )

/** A store key made as the keys CLI makes one, on Pro, with `change` applied to its item. */
const storeKey = async (change: Partial<StoreKeyItem> = {}) => {
  const { value, keyId } = newProjectKey('store', TEST_MAC_SECRETS)
  await storeKeys.put({
    keyId: keyId as string,
    keyHash: hashApiKey(value),
    name: 'alice',
    plan: 'pro',
    perMinute: 300,
    perDay: 10_000,
    enabled: true,
    createdAt: SYNCED_AT,
    macVersion: 1,
    ...change,
  })
  return { value, keyId: keyId as string }
}

beforeAll(async () => {
  env = await startDynamoTestEnv()
  mirrorTable = await createKeyMirrorTable(env)
  storeKeys = new StoreKeyRepository({
    client: env.documentClient,
    tableName: await createStoreKeyTable(env),
  })
  const mirror = new KeyMirrorReader({
    client: env.documentClient,
    tableName: mirrorTable,
    logger: fakeLogger(),
  })
  store = testKeyStore({
    mirror: {
      get: (...args) => {
        reads.push('mirror')
        return mirror.get(...args)
      },
    },
    storeKeys: {
      get: (...args) => {
        reads.push('store')
        return storeKeys.get(...args)
      },
    },
  })
  await put('acme')
  await put('disabled', { enabled: false })
  await put('bad-plan', { plan: 'gold' })
  await put('bad-limits', { perMinute: -1 })
})
afterAll(async () => {
  await env?.close()
})

describe('StageKeyStore against DynamoDB: one read per key, in the table the key names', () => {
  it('returns the caller of a mirrored key (API Gateway key id, plan and limits) from one mirror read', async () => {
    reads.length = 0
    expect(await store.lookup(keyValue('acme'))).toEqual({
      keyId: 'id-acme',
      plan: 'enterprise',
      limits: { perMinute: 7_000, perDay: 2_000_000 },
    })
    expect(reads).toEqual(['mirror'])
  })

  it.each(['unknown', 'disabled', 'bad-plan', 'bad-limits'])('knows no %s key', async (name) => {
    expect(await store.lookup(keyValue(name))).toBeUndefined()
  })

  it('returns the caller of a store key from one read of the store key table, never the mirror', async () => {
    const { value, keyId } = await storeKey()
    reads.length = 0
    expect(await store.lookup(value)).toEqual({
      keyId,
      plan: 'pro',
      limits: { perMinute: 300, perDay: 10_000 },
    })
    expect(reads).toEqual(['store'])
    expect(keyId).toMatch(/^s-[a-z0-9]{10}$/)
  })

  it('refuses a disabled store key, one past its rotation overlap, and one revoked', async () => {
    const disabled = await storeKey({ enabled: false })
    const ended = await storeKey({ disableAfter: '2020-01-01T00:00:00.000Z' })
    const overlapping = await storeKey({ disableAfter: '2999-01-01T00:00:00.000Z' })
    const revoked = await storeKey()
    await storeKeys.delete(revoked.keyId)
    expect(await store.lookup(disabled.value)).toBeUndefined()
    expect(await store.lookup(ended.value)).toBeUndefined()
    expect(await store.lookup(revoked.value)).toBeUndefined()
    expect(await store.lookup(overlapping.value)).toMatchObject({ keyId: overlapping.keyId })
  })

  it('refuses forged project keys and the pool key without reading anything', async () => {
    const { keyId } = await storeKey()
    const genuine = newProjectKey('store', TEST_MAC_SECRETS).value
    const gateway = newProjectKey('gateway', TEST_MAC_SECRETS).value
    const forgeries = [
      // The format, known to anyone, with a MAC made without the stage's secret.
      genuine.replace(/_[0-9a-f]{32}$/, `_${'0'.repeat(32)}`),
      gateway.replace(/_[0-9a-f]{32}$/, `_${'f'.repeat(32)}`),
      // A real key's id in another value: the MAC covers the id.
      genuine.replace(/^pks1_[a-z0-9]{10}_/, `pks1_${keyId.slice(2)}_`),
      // A version the stage does not hold, a body that does not parse.
      genuine.replace(/^pks1_/, 'pks2_'),
      'pkg1_tooshort_0123456789abcdef0123456789abcdef',
      TEST_POOL_KEY,
    ]
    reads.length = 0
    for (const forged of forgeries) expect(await store.lookup(forged)).toBeUndefined()
    expect(reads).toEqual([])
  })

  it('meters a store key under the pool key and every other key under itself', async () => {
    const { value } = await storeKey()
    expect(store.usageKeyOf(value)).toBe(TEST_POOL_KEY)
    expect(store.usageKeyOf(keyValue('acme'))).toBe(keyValue('acme'))
    const handler = authorizerHandler({
      keyStore: store,
      usageKeyOf: (key) => store.usageKeyOf(key),
      logger: fakeLogger(),
    })
    const allowed = await handler(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${value}` }),
      lambdaContext(),
    )
    expect(allowed.usageIdentifierKey).toBe(TEST_POOL_KEY)
    expect(allowed.context).toMatchObject({ plan: 'pro', perMinute: 300, perDay: 10_000 })
  })

  it('throws when DynamoDB fails, so the authorizer answers 500 rather than 401', async () => {
    const failing = new StageKeyStore({
      mirror: new KeyMirrorReader({
        client: createDocumentClient({
          endpoint: env.endpoint,
          region: 'us-east-1',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          maxAttempts: 1,
        }),
        tableName: 'no-such-table',
      }),
      storeKeys,
      macSecrets: TEST_MAC_SECRETS,
      poolKey: TEST_POOL_KEY,
      clock: Date.now,
    })
    await expect(failing.lookup(keyValue('acme'))).rejects.toThrow()

    const handler = authorizerHandler({ keyStore: failing, logger: fakeLogger() })
    const error = await handler(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('acme')}` }),
      lambdaContext(),
    ).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).not.toBe(UNAUTHORIZED)
  })

  it('lets the authorizer allow a mirrored key and deny the others', async () => {
    const handler = authorizerHandler({ keyStore: store, logger: fakeLogger() })
    const allowed = await handler(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('acme')}` }),
      lambdaContext(),
    )
    expect(allowed).toMatchObject({
      principalId: 'id-acme',
      usageIdentifierKey: keyValue('acme'),
      context: { keyId: 'id-acme', plan: 'enterprise', perMinute: 7_000, perDay: 2_000_000 },
    })
    await expect(
      handler(
        tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('disabled')}` }),
        lambdaContext(),
      ),
    ).rejects.toThrow(UNAUTHORIZED)
  })
})
