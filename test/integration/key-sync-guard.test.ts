import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { InconsistentKeyReadError } from '#functions/key-sync/api-gateway-key-source.ts'
import { MASS_REMOVAL } from '#functions/key-sync/removal-guard.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { lambdaContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  keyValueOf,
  planTags,
} from '#test/support/fake-api-gateway.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'

/**
 * The review's findings, replayed through the real sync (key source, handler, mirror and state
 * repositories on DynamoDB) against a fake control plane: one bad read of API Gateway used to
 * empty the mirror (`{"deleted":11}`) with nothing alarming.
 */
let env: DynamoTestEnv
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

const KEYS = Array.from({ length: 11 }, (_, n) => `key-${n}`)
const MINUTE = 60_000
let nowMs: number
let gateway: FakeApiGateway
let sync: Awaited<ReturnType<typeof createKeySyncHarness>>

const run = () => sync.handler(scheduledEvent, lambdaContext('petstore-key-sync'))
const mirroredKeyIds = async () => {
  const items = await Promise.all(KEYS.map((id) => sync.mirror.get(hashApiKey(keyValueOf(id)))))
  return items.flatMap((item) => (item ? [item.keyId] : []))
}

beforeEach(async () => {
  nowMs = Date.parse('2027-03-05T10:00:00Z')
  gateway = new FakeApiGateway()
  gateway.addPlan('plan-pro', { tags: planTags('pro') })
  for (const id of KEYS) gateway.addKey(id, 'plan-pro')
  sync = await createKeySyncHarness({ env, gateway, clock: () => nowMs })
  expect(await run()).toMatchObject({ upserted: 11, written: 11 })
  sync.takeMetrics()
})

describe('a key mirror that one bad read cannot empty', () => {
  it('writes nothing and fails when the key listing lacks keys the plans list', async () => {
    for (const id of KEYS) gateway.unlistedKeyIds.add(id)

    await expect(run()).rejects.toBeInstanceOf(InconsistentKeyReadError)

    expect(await mirroredKeyIds()).toEqual(KEYS)
    expect(sync.takeMetrics()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
    // The lease was given up: the next run reads again and succeeds.
    gateway.unlistedKeyIds.clear()
    expect(await run()).toMatchObject({ skipped: false, written: 0, deleted: 0 })
  })

  it('fails on a single missing key too, rather than revoking it on a partial answer', async () => {
    gateway.unlistedKeyIds.add('key-3')
    await expect(run()).rejects.toThrow(/1 key\(s\) attached .* missing .*key-3/)
    expect(await mirroredKeyIds()).toContain('key-3')
  })

  it('holds the removal of every key when the stage plans are momentarily missing, and alarms', async () => {
    gateway.plansMissing = true

    expect(await run()).toMatchObject({ deleted: 0, heldRemovals: 11 })

    expect(await mirroredKeyIds()).toEqual(KEYS)
    expect(sync.takeMetrics()).toMatchObject({
      [KEY_SYNC_METRICS.removalsHeld]: 11,
      [KEY_SYNC_METRICS.keysRemoved]: 0,
      [KEY_SYNC_METRICS.succeeded]: 1,
    })
    // The plans are back: the held removal is forgotten.
    gateway.plansMissing = false
    nowMs += MINUTE
    expect(await run()).toMatchObject({ deleted: 0, heldRemovals: 0 })
    expect(await sync.state.get()).not.toHaveProperty('heldRemoval')
  })

  it('applies a mass removal once runs spanning five minutes agree on it', async () => {
    for (const id of KEYS.slice(0, 8)) gateway.detach(id, 'plan-pro')
    for (let minute = 0; minute < 5; minute += 1) {
      expect(await run(), `minute ${minute}`).toMatchObject({ deleted: 0, heldRemovals: 8 })
      nowMs += MINUTE
    }
    expect(nowMs - Date.parse('2027-03-05T10:00:00Z')).toBe(MASS_REMOVAL.agreementMs)

    expect(await run()).toMatchObject({ deleted: 8, heldRemovals: 0, cacheFlushed: true })
    expect(await mirroredKeyIds()).toEqual(KEYS.slice(8))
  })

  it('applies a mass removal at once when an operator confirms its count', async () => {
    for (const id of KEYS.slice(0, 8)) gateway.setEnabled(id, false)
    expect(await run()).toMatchObject({ heldRemovals: 8 })

    const confirmed = await sync.handler({ confirmRemovals: 8 }, lambdaContext())

    expect(confirmed).toMatchObject({ deleted: 8 })
    expect(await mirroredKeyIds()).toEqual(KEYS.slice(8))
  })

  it('removes up to half of the keys at once, puts before deletes, and flushes the cache', async () => {
    gateway.flushes.length = 0
    for (const id of KEYS.slice(0, 5)) gateway.setEnabled(id, false)
    gateway.addKey('key-new', 'plan-pro')

    expect(await run()).toMatchObject({ written: 1, deleted: 5, cacheFlushed: true })

    expect(await mirroredKeyIds()).toEqual(KEYS.slice(5))
    expect(gateway.flushes).toEqual([`${FAKE_API_ID}/${FAKE_STAGE}`])
  })

  it('runs one sync at a time across instances: a concurrent run skips', async () => {
    const other = await createKeySyncHarness({ env, gateway, clock: () => nowMs })
    // Two instances of the function on the same table: the second finds the lease taken.
    const [first, second] = await Promise.all([
      run(),
      sync.handler(scheduledEvent, lambdaContext('petstore-key-sync-2')),
    ])
    expect([first.skipped, second.skipped].sort()).toEqual([false, 'lease-held'])
    // A different table is a different stage: its lease is its own.
    expect(await other.handler(scheduledEvent, lambdaContext())).toMatchObject({ skipped: false })
  })
})
