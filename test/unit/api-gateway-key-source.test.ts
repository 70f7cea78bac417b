import {
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
} from '@aws-sdk/client-api-gateway'
import { beforeEach, describe, expect, it } from 'vitest'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import type { CallPacer } from '#keys/call-pacer.ts'
import { DISABLE_AFTER_TAG } from '#keys/key-verdicts.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  keyValueOf,
  planTags,
} from '#test/support/fake-api-gateway.ts'

let gateway: FakeApiGateway

const sourceFor = (pageSize?: number, pacer?: CallPacer) =>
  new ApiGatewayKeySource({
    client: gateway.client,
    restApiId: FAKE_API_ID,
    stage: FAKE_STAGE,
    ...(pageSize ? { pageSize } : {}),
    ...(pacer ? { pacer } : {}),
  })

const keyIdsOf = (entries: { keyId: string }[]) => entries.map((entry) => entry.keyId).sort()

beforeEach(() => {
  gateway = new FakeApiGateway()
})

describe('ApiGatewayKeySource', () => {
  it('leaves out a key once its disable-after tag has passed (a rotation overlap ending)', async () => {
    const now = Date.UTC(2026, 10, 22, 12, 0, 0)
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    for (const id of ['current', 'until-later', 'until-now', 'until-typo']) {
      gateway.addKey(id, 'plan-pro')
    }
    const tag = (id: string, value: string) =>
      gateway.keys.set(id, { ...gateway.keys.get(id), tags: { [DISABLE_AFTER_TAG]: value } })
    tag('until-later', new Date(now + 1).toISOString())
    tag('until-now', new Date(now).toISOString())
    tag('until-typo', 'tomorrow')
    const source = new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
      clock: () => now,
    })

    const snapshot = await source.read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['current', 'until-later'])
    expect(snapshot.disabledKeys).toBe(2)
  })

  it('mirrors an enabled key of a stage plan by the hash of its value, with the plan limits', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-1', 'plan-pro')

    const snapshot = await sourceFor().read()

    expect(snapshot.entries).toEqual([
      {
        keyHash: hashApiKey(keyValueOf('key-1')),
        keyId: 'key-1',
        enabled: true,
        plan: 'pro',
        perMinute: PLAN_LIMITS.pro.perMinute,
        perDay: PLAN_LIMITS.pro.perDay,
        usagePlanId: 'plan-pro',
      },
    ])
    expect(snapshot).toMatchObject({
      stagePlans: 1,
      refusedPlans: [],
      refusedKeyIds: [],
      stageIds: ['key-1', 'plan-pro'],
    })
    expect(JSON.stringify(snapshot)).not.toContain(keyValueOf('key-1'))
  })

  it('uses a key a plan lists that the key listing lacks (created after it) when GetApiKey finds it', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-1', 'plan-pro')
    gateway.addKey('key-2', 'plan-pro')
    gateway.unlistedKeyIds.add('key-2')

    const snapshot = await sourceFor().read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['key-1', 'key-2'])
    expect(gateway.mock.commandCalls(GetApiKeyCommand)[0]?.args[0].input).toEqual({
      apiKey: 'key-2',
      includeValue: true,
    })
  })

  it('fails a read with more such keys than it looks up, naming some', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    for (let k = 0; k < 26; k += 1) {
      gateway.addKey(`key-${k}`, 'plan-pro')
      gateway.unlistedKeyIds.add(`key-${k}`)
    }

    await expect(sourceFor().read()).rejects.toThrow(
      /Inconsistent read of API Gateway: 26 key\(s\) attached to a usage plan of the stage are missing from the key listing \(key-0, /,
    )
  })

  it('leaves out a key a plan still lists after its deletion, once GetApiKey says it is gone', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-1', 'plan-pro')
    // What moto answers after DeleteApiKey, and a deletion between the two listings looks like.
    gateway.planKeys.get('plan-pro')?.push('key-deleted')

    const snapshot = await sourceFor().read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['key-1'])
    expect(snapshot.managementCalls).toBe(4)
  })

  it('fails a listing whose position token repeats, rather than stopping there', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    for (let k = 0; k < 3; k += 1) gateway.addKey(`key-${k}`, 'plan-pro')
    gateway.mock.on(GetApiKeysCommand).resolves({ items: [], position: 'same' })

    await expect(sourceFor(1).read()).rejects.toThrow(
      "API Gateway's API key listing repeated its position token at page 2",
    )
  })

  it('reads plans until its deadline (the first always), and names where the rotation stopped', async () => {
    for (const id of ['p1', 'p2', 'p3', 'p4']) {
      gateway.addPlan(id, { tags: planTags('free') })
      gateway.addKey(`${id}-key`, id)
    }
    let now = 0
    // Each call takes a second of the run's budget.
    gateway.mock.on(GetUsagePlanKeysCommand).callsFake(async (input) => {
      now += 1_000
      return { items: (gateway.planKeys.get(input.usagePlanId) ?? []).map((id) => ({ id })) }
    })
    const source = new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
      clock: () => now,
    })

    const first = await source.read({ deadlineMs: 2_000 })
    expect(first).toMatchObject({ plansRead: ['p1', 'p2'], complete: false, cursor: 'p2' })
    expect(keyIdsOf(first.entries)).toEqual(['p1-key', 'p2-key'])
    // The next run goes on after p2 and ends the rotation at the last plan.
    now = 0
    const second = await source.read({ deadlineMs: 3_000, cursor: 'p2' })
    expect(second).toMatchObject({ plansRead: ['p3', 'p4'], complete: false, cursor: undefined })
    now = 10_000
    expect(await source.read({ deadlineMs: 0 })).toMatchObject({ plansRead: ['p1'] })
    now = 0
    expect(await source.read({})).toMatchObject({ complete: true, cursor: undefined })
  })

  it('says which named ids it read: a key whose plans it had no time to look up waits', async () => {
    for (const id of ['p1', 'p2']) gateway.addPlan(id, { tags: planTags('free') })
    gateway.addKey('k1', 'p1')
    const source = new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
      clock: () => 10_000,
    })

    const snapshot = await source.read({
      deadlineMs: 0,
      priorityIds: ['k1', 'p2', 'gone123456'],
      onlyNamed: true,
    })

    // The first plan is always read; the key's lookup is past the deadline; an unknown id has
    // nothing to read.
    expect(snapshot.plansRead).toEqual(['p2'])
    expect(snapshot.namedRead).toEqual(['p2', 'gone123456'])
  })

  it('reads the plans events named first: by plan id, or by the id of a key on them', async () => {
    for (const id of ['p1', 'p2', 'p3']) gateway.addPlan(id, { tags: planTags('free') })
    gateway.addKey('k3', 'p3')
    gateway.addKey('k2', 'p2')

    const snapshot = await sourceFor().read({ priorityIds: ['k3', 'p2'], onlyNamed: true })

    expect(snapshot).toMatchObject({ plansRead: ['p2', 'p3'], complete: false })
    expect(keyIdsOf(snapshot.entries)).toEqual(['k2', 'k3'])
    expect(gateway.mock.commandCalls(GetUsagePlansCommand)[1]?.args[0].input).toMatchObject({
      keyId: 'k3',
    })
  })

  it('takes Enterprise limits from the plan tags', async () => {
    gateway.addPlan('plan-acme', {
      tags: planTags('Enterprise', { perMinute: 7_000, perDay: 2e6 }),
    })
    gateway.addKey('key-acme', 'plan-acme')

    const { entries } = await sourceFor().read()

    expect(entries).toEqual([
      expect.objectContaining({
        keyId: 'key-acme',
        plan: 'enterprise',
        perMinute: 7_000,
        perDay: 2e6,
      }),
    ])
  })

  it('reads every page of plans, plan keys and API keys with includeValues', async () => {
    for (let p = 0; p < 5; p += 1) gateway.addPlan(`plan-${p}`, { tags: planTags('free') })
    for (let k = 0; k < 11; k += 1)
      gateway.addKey(`key-${String(k).padStart(2, '0')}`, `plan-${k % 5}`)
    // Keys of other stages fill the account-wide key listing too.
    for (let k = 0; k < 6; k += 1) gateway.addKey(`other-${k}`)

    const snapshot = await sourceFor(2).read()

    expect(keyIdsOf(snapshot.entries)).toEqual(
      Array.from({ length: 11 }, (_, k) => `key-${String(k).padStart(2, '0')}`),
    )
    // Plans: 3 pages of 2. Plan keys: plan-0 has 3 keys (2 pages), plan-1..4 have 2 (1 page each).
    // API keys: 17 keys, 9 pages.
    expect(gateway.callCounts()).toEqual({
      GetUsagePlansCommand: 3,
      GetUsagePlanKeysCommand: 6,
      GetApiKeysCommand: 9,
    })
    expect(snapshot.managementCalls).toBe(18)
    for (const call of gateway.mock.commandCalls(GetApiKeysCommand)) {
      expect(call.args[0].input).toMatchObject({ includeValues: true, limit: 2 })
    }
  })

  it('asks for pages of 500 by default', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-1', 'plan-pro')

    const snapshot = await sourceFor().read()

    expect(snapshot.managementCalls).toBe(3)
    const firstInputs = [
      gateway.mock.commandCalls(GetUsagePlansCommand)[0]?.args[0].input,
      gateway.mock.commandCalls(GetUsagePlanKeysCommand)[0]?.args[0].input,
      gateway.mock.commandCalls(GetApiKeysCommand)[0]?.args[0].input,
    ]
    for (const input of firstInputs) expect(input).toMatchObject({ limit: 500 })
  })

  it('ignores plans of other APIs and other stages, and never lists their keys', async () => {
    gateway.addPlan('plan-here', { tags: planTags('pro') })
    gateway.addPlan('plan-other-api', { tags: planTags('pro'), apiId: 'zzzzzzzzzz' })
    gateway.addPlan('plan-other-stage', { tags: planTags('pro'), stage: 'staging' })
    gateway.addKey('key-here', 'plan-here')
    gateway.addKey('key-other-api', 'plan-other-api')
    gateway.addKey('key-other-stage', 'plan-other-stage')

    const snapshot = await sourceFor().read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['key-here'])
    expect(snapshot.stagePlans).toBe(1)
    expect(
      gateway.mock
        .commandCalls(GetUsagePlanKeysCommand)
        .map((call) => call.args[0].input.usagePlanId),
    ).toEqual(['plan-here'])
  })

  it('skips disabled keys and keys attached to no plan of the stage', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-on', 'plan-pro')
    gateway.addKey('key-off', 'plan-pro', { enabled: false })
    gateway.addKey('key-loose')

    const snapshot = await sourceFor().read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['key-on'])
    expect(snapshot.disabledKeys).toBe(1)
  })

  it('refuses plans with bad tags and reports them and their key ids, never key values', async () => {
    gateway.addPlan('plan-ok', { tags: planTags('business') })
    gateway.addPlan('plan-untagged')
    gateway.addPlan('plan-typo', { tags: planTags('enterprize') })
    gateway.addPlan('plan-no-limits', { tags: planTags('enterprise') })
    gateway.addKey('key-ok', 'plan-ok')
    gateway.addKey('key-untagged', 'plan-untagged')
    gateway.addKey('key-typo', 'plan-typo')
    gateway.addKey('key-no-limits', 'plan-no-limits')

    const snapshot = await sourceFor().read()

    expect(keyIdsOf(snapshot.entries)).toEqual(['key-ok'])
    expect(snapshot.refusedPlans).toEqual([
      { usagePlanId: 'plan-no-limits', reason: expect.stringContaining('petstore:perMinute') },
      { usagePlanId: 'plan-typo', reason: expect.stringContaining('not one of') },
      { usagePlanId: 'plan-untagged', reason: 'missing tag petstore:plan' },
    ])
    expect(snapshot.refusedKeyIds).toEqual(['key-no-limits', 'key-typo', 'key-untagged'])
    const report = JSON.stringify(snapshot)
    for (const id of ['key-ok', 'key-untagged', 'key-typo', 'key-no-limits']) {
      expect(report).not.toContain(keyValueOf(id))
    }
  })

  it('fails when API Gateway fails (the caller keeps the previous mirror)', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.failure = Object.assign(new Error('Too Many Requests'), {
      name: 'TooManyRequestsException',
    })

    await expect(sourceFor().read()).rejects.toThrow('Too Many Requests')
  })

  it('takes a pacer slot before every call, and none after the last page', async () => {
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addKey('key-1', 'plan-pro')
    gateway.addKey('key-2', 'plan-pro')
    let slots = 0
    const pacer = {
      take: async () => {
        slots += 1
      },
    }
    const snapshot = await sourceFor(1, pacer).read()

    // 1 plan page, 2 plan-key pages, 2 API key pages.
    expect(gateway.totalCalls()).toBe(5)
    expect(slots).toBe(5)
    expect(snapshot.managementCalls).toBe(5)
  })
})
