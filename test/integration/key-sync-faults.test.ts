import { TooManyRequestsException } from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { UNREAD_PLAN_BACKOFF } from '#functions/key-sync/key-sync-run.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { FakeApiGateway, keyValueOf, planTags } from '#test/support/fake-api-gateway.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'
import { simulateBacklog } from '#test/support/key-sync-simulation.ts'

/**
 * The key sync under faults a real account produces, through the real handler, key source,
 * mirror and state on DynamoDB, on a virtual clock: one plan that cannot be read, deleted keys
 * a plan still lists, a backlog of thousands of named ids, a plan that lost its tags.
 */
let env: DynamoTestEnv
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

const MINUTE = 60_000
const PLANS = ['plan0aaaaa', 'plan1aaaaa', 'plan2aaaaa', 'plan3aaaaa']
const keysOf = (plan: string, count: number) =>
  Array.from({ length: count }, (_, n) => `${plan.slice(0, 5)}k${String(n).padStart(4, '0')}`)
let nowMs: number
let gateway: FakeApiGateway
let sync: Awaited<ReturnType<typeof createKeySyncHarness>>
const run = () => sync.handler(scheduledEvent, keySyncContext())
const mirrored = async (id: string) =>
  (await sync.mirror.get(hashApiKey(keyValueOf(id)), { consistent: true })) !== undefined
const named = (ids: string[]) =>
  sync.handler(
    { 'detail-type': 'petstore keys CLI', source: 'petstore.keys-cli', detail: { ids } } as never,
    keySyncContext(),
  )

beforeEach(async () => {
  nowMs = Date.parse('2027-03-05T02:00:00Z')
  gateway = new FakeApiGateway()
  for (const plan of PLANS) {
    gateway.addPlan(plan, { tags: planTags(plan === 'plan1aaaaa' ? 'pro' : 'free') })
  }
  for (const plan of PLANS) for (const id of keysOf(plan, 40)) gateway.addKey(id, plan)
  sync = await createKeySyncHarness({ env, gateway, clock: () => nowMs })
  expect(await run()).toMatchObject({ upserted: 160, complete: true })
  sync.takeMetrics()
})

describe('a plan whose keys cannot be read', () => {
  const throttled = () =>
    new TooManyRequestsException({ message: 'Too Many Requests', $metadata: {} })

  it("keeps its keys, and puts the other plans' revocations and new keys in force in the same run", async () => {
    gateway.planKeysFailures.set('plan2aaaaa', throttled())
    gateway.setEnabled(keysOf('plan0aaaaa', 1)[0] as string, false)
    gateway.addKey('newkey0001', 'plan3aaaaa')
    gateway.detach(keysOf('plan2aaaaa', 1)[0] as string, 'plan2aaaaa')

    expect(await run()).toMatchObject({ skipped: false, deleted: 1, written: 1, complete: false })

    expect(await mirrored(keysOf('plan0aaaaa', 1)[0] as string)).toBe(false)
    expect(await mirrored('newkey0001')).toBe(true)
    // Its keys stay as the last read left them, the detached one included.
    expect(await mirrored(keysOf('plan2aaaaa', 1)[0] as string)).toBe(true)
    expect(sync.takeMetrics()).toMatchObject({
      [KEY_SYNC_METRICS.unreadPlans]: 1,
      [KEY_SYNC_METRICS.failures]: 0,
    })
    expect(sync.logger.error).toHaveBeenCalledWith(
      'Usage plan could not be read: its keys stay as they are',
      { usagePlanId: 'plan2aaaaa', reason: 'TooManyRequestsException' },
    )
    // The rotation passes over it while its backoff lasts, and reads it again after.
    const calls = gateway.callCounts().GetUsagePlanKeysCommand
    nowMs += UNREAD_PLAN_BACKOFF.firstMs / 2
    await run()
    expect(gateway.callCounts().GetUsagePlanKeysCommand).toBe((calls ?? 0) + 3)
    gateway.planKeysFailures.clear()
    nowMs += UNREAD_PLAN_BACKOFF.firstMs
    expect(await run()).toMatchObject({ deleted: 1, complete: true })
    expect(await sync.state.get()).not.toHaveProperty('unreadPlans')
  })

  it('stops holding up the runs that other ids need once a named plan failed a few times', async () => {
    gateway.planKeysFailures.set('plan2aaaaa', throttled())
    for (let tries = 1; tries <= UNREAD_PLAN_BACKOFF.namedTries; tries += 1) {
      gateway.addKey(`cli${tries}aaaaaa`, 'plan3aaaaa')
      // The keys CLI names its change's key and plan ids, the failing plan among them.
      expect(await named(['plan2aaaaa', 'plan3aaaaa', `cli${tries}aaaaaa`])).toMatchObject({
        skipped: false,
      })
      expect(await mirrored(`cli${tries}aaaaaa`)).toBe(true)
      nowMs += MINUTE
    }
    expect((await sync.state.get()).pendingIds).toBeUndefined()
    expect(sync.logger.error).toHaveBeenCalledWith(
      'Ids named by events whose plans keep failing are left to the rotation',
      { ids: ['plan2aaaaa'], count: 1 },
    )
  })
})

describe('keys a plan lists that the key listing lacks', () => {
  it('are gone when GetApiKey cannot find them, however many', async () => {
    const deleted = keysOf('plan1aaaaa', 30)
    // Deleted keys that plan1's listing still names (moto keeps them), 30 of its 40.
    for (const id of deleted) gateway.keys.delete(id)

    const result = await run()

    expect(result).toMatchObject({ skipped: false, complete: true })
    // 30 of 40 keys of one plan is most of it, but deleted keys are never held: API Gateway
    // cannot bring them back. Nothing failed.
    expect(result).toMatchObject({ deleted: 30, heldRemovals: 0 })
    expect(sync.takeMetrics()).toMatchObject({ [KEY_SYNC_METRICS.failures]: 0 })
  })
})

describe('a plan that lost its tags', () => {
  it('keeps its 40 keys for as long as an operator has not confirmed them, then removes them', async () => {
    const pro = keysOf('plan1aaaaa', 40)
    gateway.plans.set('plan1aaaaa', {
      ...gateway.plans.get('plan1aaaaa'),
      tags: planTags('prp'),
    })
    for (let minute = 0; minute <= 60; minute += 1) {
      expect(await run(), `minute ${minute}`).toMatchObject({ deleted: 0, heldRemovals: 40 })
      nowMs += MINUTE
    }
    expect(await mirrored(pro[0] as string)).toBe(true)
    expect((await sync.state.get()).heldRemovals?.plan1aaaaa).toMatchObject({
      cause: 'plan-lost',
      count: 40,
      keyIds: pro,
    })

    expect(await sync.handler({ confirmRemovals: pro }, keySyncContext())).toMatchObject({
      deleted: 40,
    })
    expect(await mirrored(pro[0] as string)).toBe(false)
  })
})

describe('a backlog of 2,000 named ids', () => {
  it.each([4, 1_000])(
    'puts a console disable in force within 10 s at %i plans, and drains the backlog',
    // A virtual clock's 10 minutes: 5 s of CPU at 1,000 plans on an idle machine, 121 s at a
    // load average of 20. The limit only guards a hang.
    { timeout: 300_000 },
    async (plans) => {
      const outcome = await simulateBacklog(env, plans, 3_000, 2_000, 10 * MINUTE)
      expect(outcome.revocationMs).toBeLessThan(10_000)
      if (plans === 4) expect(outcome.backlogGoneMs).toBeLessThan(5 * MINUTE)
    },
  )
})
