import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MASS_REMOVAL } from '#functions/key-sync/removal-guard.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
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

const run = () => sync.handler(scheduledEvent, keySyncContext())
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
  it('uses keys the key listing lacks when GetApiKey finds them, and revokes none', async () => {
    for (const id of KEYS) gateway.unlistedKeyIds.add(id)

    expect(await run()).toMatchObject({ skipped: false, written: 0, deleted: 0 })

    expect(await mirroredKeyIds()).toEqual(KEYS)
    expect(gateway.callCounts().GetApiKeyCommand).toBe(KEYS.length)
  })

  it('writes nothing and fails when more keys are missing than a run looks up, naming some', async () => {
    const more = Array.from({ length: 26 }, (_, n) => `extra-${n}`)
    for (const id of more) gateway.addKey(id, 'plan-pro')
    for (const id of more) gateway.unlistedKeyIds.add(id)

    await expect(run()).rejects.toThrow(/26 key\(s\) attached .* missing .*extra-0/)

    expect(await mirroredKeyIds()).toEqual(KEYS)
    expect(sync.takeMetrics()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
    // The lease was given up: the next run reads again and succeeds.
    gateway.unlistedKeyIds.clear()
    expect(await run()).toMatchObject({ skipped: false, written: 26, deleted: 0 })
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
    expect(await sync.state.get()).not.toHaveProperty('heldRemovals')
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

  it('applies a mass removal at once when an operator names its keys', async () => {
    for (const id of KEYS.slice(0, 8)) gateway.setEnabled(id, false)
    expect(await run()).toMatchObject({ heldRemovals: 8 })

    const confirmed = await sync.handler({ confirmRemovals: KEYS.slice(0, 8) }, keySyncContext())

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
      sync.handler(scheduledEvent, keySyncContext('petstore-key-sync-2')),
    ])
    expect([first.skipped, second.skipped].sort()).toEqual([false, 'lease-held'])
    // A different table is a different stage: its lease is its own.
    expect(await other.handler(scheduledEvent, keySyncContext())).toMatchObject({
      skipped: false,
    })
  })
})

/**
 * A stage as operators run it: four standard plans and per-customer Enterprise plans, so no one
 * plan is ever half of the mirror. A console slip on one plan used to remove all its keys in one
 * run, with no alarm when the plan was detached.
 */
describe('a guard per plan', () => {
  const CUSTOMERS = Array.from({ length: 10 }, (_, n) => `cust${n}`)
  const keysOfPlan = (plan: string, count: number) =>
    Array.from({ length: count }, (_, n) => `${plan}-key-${n}`)
  const PRO_KEYS = keysOfPlan('pro', 5)
  const ALL_KEYS = [
    ...keysOfPlan('free', 20),
    ...PRO_KEYS,
    ...keysOfPlan('business', 3),
    ...CUSTOMERS.map((id) => `${id}-key-0`),
  ]
  const mirrored = async () => {
    const items = await Promise.all(
      ALL_KEYS.map((id) => sync.mirror.get(hashApiKey(keyValueOf(id)))),
    )
    return items.flatMap((item) => (item ? [item.keyId] : []))
  }

  beforeEach(async () => {
    gateway = new FakeApiGateway()
    gateway.addPlan('free', { tags: planTags('free') })
    gateway.addPlan('pro', { tags: planTags('pro') })
    gateway.addPlan('business', { tags: planTags('business') })
    for (const id of CUSTOMERS) {
      gateway.addPlan(id, { tags: planTags('enterprise', { perMinute: 100, perDay: 5_000 }) })
    }
    for (const plan of ['free', 'pro', 'business']) {
      for (const id of keysOfPlan(plan, plan === 'free' ? 20 : plan === 'pro' ? 5 : 3)) {
        gateway.addKey(id, plan)
      }
    }
    for (const id of CUSTOMERS) gateway.addKey(`${id}-key-0`, id)
    sync = await createKeySyncHarness({ env, gateway, clock: () => nowMs })
    expect(await run()).toMatchObject({ upserted: ALL_KEYS.length })
    sync.takeMetrics()
  })

  const expectHeldAndAlarmed = async (lost: number) => {
    expect(await run()).toMatchObject({ deleted: 0, heldRemovals: PRO_KEYS.length })
    expect(await mirrored()).toEqual(ALL_KEYS)
    expect(sync.takeMetrics()).toMatchObject({
      [KEY_SYNC_METRICS.removalsHeld]: PRO_KEYS.length,
      [KEY_SYNC_METRICS.plansLost]: lost,
      [KEY_SYNC_METRICS.keysRemoved]: 0,
    })
    expect(sync.logger.error).toHaveBeenCalledWith(
      'Key sync withheld a removal: confirm it or wait for runs to agree',
      expect.objectContaining({ group: 'pro', cause: 'plan-lost', keyIds: PRO_KEYS }),
    )
  }

  it('holds the keys of a plan whose tag was mistyped in the console, and alarms at once', async () => {
    gateway.plans.set('pro', { ...gateway.plans.get('pro'), tags: planTags('prp') })
    await expectHeldAndAlarmed(1)
  })

  it('holds the keys of a plan detached from the stage, and alarms at once', async () => {
    gateway.plans.set('pro', {
      ...gateway.plans.get('pro'),
      apiStages: [{ apiId: FAKE_API_ID, stage: 'staging' }],
    })
    await expectHeldAndAlarmed(1)
  })

  it('holds the keys of a plan missing from one page of the listing', async () => {
    gateway.unlistedPlanIds.add('pro')
    await expectHeldAndAlarmed(1)
    // The plan is back on the next read: nothing was lost, nothing stays held.
    gateway.unlistedPlanIds.clear()
    expect(await run()).toMatchObject({ deleted: 0, heldRemovals: 0 })
    expect(await sync.state.get()).not.toHaveProperty('heldRemovals')
  })

  it("alarms on a lost customer plan with a single key, and still revokes a customer's key at once", async () => {
    gateway.plans.set('cust1', { ...gateway.plans.get('cust1'), tags: {} })
    gateway.setEnabled('cust2-key-0', false)
    expect(await run()).toMatchObject({ deleted: 1, heldRemovals: 1 })
    expect(await mirrored()).not.toContain('cust2-key-0')
    expect(await mirrored()).toContain('cust1-key-0')
    expect(sync.takeMetrics()).toMatchObject({ [KEY_SYNC_METRICS.plansLost]: 1 })
  })

  it('holds the removal of all keys of a valid plan, and of most of one', async () => {
    for (const id of keysOfPlan('business', 3)) gateway.setEnabled(id, false)
    for (const id of PRO_KEYS.slice(0, 3)) gateway.detach(id, 'pro')
    expect(await run()).toMatchObject({ deleted: 0, heldRemovals: 6 })
    expect(await mirrored()).toEqual(ALL_KEYS)
  })

  it('applies a held removal when the operator names every key it was shown, not on a count', async () => {
    gateway.plans.set('pro', { ...gateway.plans.get('pro'), tags: planTags('prp') })
    await run()

    expect(await sync.handler({ confirmRemovals: 5 } as never, keySyncContext())).toMatchObject({
      deleted: 0,
    })
    expect(
      await sync.handler({ confirmRemovals: PRO_KEYS.slice(1) }, keySyncContext()),
    ).toMatchObject({ deleted: 0 })
    expect(await sync.handler({ confirmRemovals: PRO_KEYS }, keySyncContext())).toMatchObject({
      deleted: PRO_KEYS.length,
    })
    expect(await mirrored()).toEqual(ALL_KEYS.filter((id) => !PRO_KEYS.includes(id)))
  })
})

describe('a change named by id', () => {
  const named = (ids: string[]) =>
    sync.handler(
      { 'detail-type': 'petstore keys CLI', source: 'petstore.keys-cli', detail: { ids } } as never,
      keySyncContext(),
    )

  // Ids as API Gateway makes them (10 lower-case letters and digits): what events and the CLI name.
  beforeEach(async () => {
    gateway.addKey('k4abcdefgh', 'plan-pro')
    gateway.addKey('k5abcdefgh', 'plan-pro')
    await run()
  })

  it('takes a deleted key out without reading any plan: its id is all the run needs', async () => {
    gateway.keys.delete('k4abcdefgh')
    gateway.detach('k4abcdefgh', 'plan-pro')

    expect(await named(['k4abcdefgh'])).toMatchObject({ deleted: 1, plansRead: 0 })

    expect(await sync.mirror.get(hashApiKey(keyValueOf('k4abcdefgh')))).toBeUndefined()
    expect(await mirroredKeyIds()).toEqual(KEYS)
    expect(await sync.state.get()).not.toHaveProperty('pendingIds')
  })

  it('reads the plans of a disabled key it names, and no other', async () => {
    gateway.addPlan('plan-free', { tags: planTags('free') })
    gateway.setEnabled('k5abcdefgh', false)

    expect(await named(['k5abcdefgh'])).toMatchObject({ deleted: 1, plansRead: 1 })
    expect(await sync.mirror.get(hashApiKey(keyValueOf('k5abcdefgh')))).toBeUndefined()
  })
})
