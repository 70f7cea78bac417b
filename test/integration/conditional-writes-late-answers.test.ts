import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createDocumentClient,
  DYNAMO_CLIENT_LIMITS,
  dynamoConfigFromEnv,
} from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { FakeApiGateway, keyValueOf, planTags } from '#test/support/fake-api-gateway.ts'
import { type FaultProxy, type FaultRule, startFaultProxy } from '#test/support/fault-proxy.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'

/**
 * Every conditional write of the project (docs/reliability.md, "Conditional writes and late
 * answers") when its own first attempt was applied but answered late: a real HTTP proxy in front
 * of the test DynamoDB applies the write at once and holds DynamoDB's answer past the SDK's request
 * timeout (the deployed limits: 1 s per attempt, 2 attempts), so the SDK sends the same write
 * again, which then meets its own first attempt. Each test names the outcome the write must have.
 * The tests run side by side, each with a proxy of its own: most of their time is the wait.
 */
const LATE_MS = DYNAMO_CLIENT_LIMITS.requestTimeoutMs + 500

let env: DynamoTestEnv
const proxies: FaultProxy[] = []
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()))
  await env?.close()
})

/** A document client with the deployed limits, through a proxy of its own answering `rule` late. */
const latent = async (rule: Omit<FaultRule, 'kind' | 'times'>) => {
  const proxy = await startFaultProxy(env.endpoint)
  proxies.push(proxy)
  const client = createDocumentClient({
    ...dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: proxy.endpoint }, DYNAMO_CLIENT_LIMITS),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const arm = () => proxy.setRule({ ...rule, kind: 'late-answer', times: 1, delayMs: LATE_MS })
  return { proxy, client, arm }
}

const keyOf = (body: string, name: string) => body.includes(name)

describe.concurrent('the key sync state item (keys/key-sync-state-repository.ts)', () => {
  const KEYS = ['key-1', 'key-2', 'key-3']
  const syncOn = async (rule: Omit<FaultRule, 'kind' | 'times'>) => {
    const gateway = new FakeApiGateway()
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    for (const id of KEYS) gateway.addKey(id, 'plan-pro')
    const { proxy, client, arm } = await latent(rule)
    const sync = await createKeySyncHarness({ env, gateway, clock: () => Date.now(), client })
    const run = () => sync.handler(scheduledEvent, keySyncContext())
    const mirrored = async () =>
      (await Promise.all(KEYS.map((id) => sync.mirror.get(hashApiKey(keyValueOf(id)))))).filter(
        Boolean,
      ).length
    return { gateway, proxy, sync, run, arm, mirrored }
  }

  it('acquire: a run whose lease write was answered late holds its own lease and runs', async () => {
    const { proxy, sync, run, arm, mirrored } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'attribute_not_exists(leaseExpiresAt)'),
    })
    arm()
    const result = await run()
    expect(proxy.injected.get('late-answer')).toBe(1)
    expect(proxy.matched()).toBe(2)
    expect(result).toMatchObject({ skipped: false, upserted: KEYS.length })
    expect(await mirrored()).toBe(KEYS.length)
    // Given up by the run itself: the next run is not skipped for 90 s.
    expect(await run()).toMatchObject({ skipped: false })
    expect(await sync.state.get()).toMatchObject({ lastSuccessAt: expect.any(Number) })
  })

  it('complete: a run whose state save was answered late has succeeded, and left no lease', async () => {
    const { proxy, sync, run, arm, mirrored } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'lastSuccessAt = :lastSuccessAt'),
    })
    const before = Date.now()
    arm()
    expect(await run()).toMatchObject({ skipped: false, upserted: KEYS.length })
    expect(proxy.matched()).toBe(2)
    expect(await mirrored()).toBe(KEYS.length)
    expect((await sync.state.get()).lastSuccessAt).toBeGreaterThanOrEqual(before)
    expect(await run()).toMatchObject({ skipped: false })
  })

  it('held removals: a hold saved, and a confirmation applied, by late-answered saves', async () => {
    const { gateway, proxy, sync, run, arm, mirrored } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'lastSuccessAt = :lastSuccessAt'),
    })
    expect(await run()).toMatchObject({ upserted: KEYS.length })
    // The plan loses its tag: its keys are held until an operator confirms them.
    gateway.addPlan('plan-pro', {})
    arm()
    expect(await run()).toMatchObject({ skipped: false, deleted: 0 })
    expect(proxy.matched()).toBe(2)
    const held = (await sync.state.get()).heldRemovals ?? {}
    expect(held['plan-pro']).toMatchObject({ count: KEYS.length, keyIds: KEYS })
    expect(await mirrored()).toBe(KEYS.length)
    arm()
    const confirmed = await sync.handler({ confirmRemovals: KEYS }, keySyncContext())
    expect(confirmed).toMatchObject({ skipped: false, deleted: KEYS.length })
    expect(proxy.matched()).toBe(2)
    expect((await sync.state.get()).heldRemovals).toBeUndefined()
    expect(await mirrored()).toBe(0)
  })

  it('release: a failed run whose lease release was answered late leaves no lease', async () => {
    const { gateway, proxy, run, arm } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'REMOVE leaseOwner') && keyOf(body, 'leaseOwner = :owner'),
    })
    gateway.failure = new Error('the management API is down')
    arm()
    await expect(run()).rejects.toThrow('the management API is down')
    expect(proxy.matched()).toBe(2)
    gateway.failure = undefined
    expect(await run()).toMatchObject({ skipped: false, upserted: KEYS.length })
  })

  it('addPending: ids an event names, recorded once however often the write is sent', async () => {
    const { proxy, sync, arm } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'ADD pendingIds'),
    })
    arm()
    await sync.state.addPending(['key-1', 'plan-pro'], 1_000)
    expect(proxy.matched()).toBe(2)
    expect(await sync.state.get()).toMatchObject({
      pendingIds: ['key-1', 'plan-pro'],
      pendingNamedAt: { 'key-1': [1_000], 'plan-pro': [1_000] },
    })
  })

  it('breakLease: a lease broken by a late-answered write is gone', async () => {
    const { proxy, sync, arm } = await syncOn({
      operation: 'UpdateItem',
      matches: (body) => keyOf(body, 'attribute_exists(leaseOwner)'),
    })
    expect(await sync.state.acquire('left-by-a-killed-server', Date.now(), 90_000)).toBeDefined()
    arm()
    await sync.state.breakLease()
    expect(proxy.matched()).toBe(2)
    expect(await sync.state.acquire('next-run', Date.now(), 90_000)).toBeDefined()
  })
})
