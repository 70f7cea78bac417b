import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  APIGatewayClient,
  CreateUsagePlanKeyCommand,
  type GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanCommand,
} from '@aws-sdk/client-api-gateway'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  ApiGatewayKeySource,
  DISABLE_AFTER_TAG,
} from '#functions/key-sync/api-gateway-key-source.ts'
import { TokenBucketPacer } from '#functions/key-sync/call-pacer.ts'
import { type KeySyncResult, NOTHING_DONE } from '#functions/key-sync/key-sync-handler.ts'
import { bootstrapControlPlane, localOutputs } from '#local/control-plane-bootstrap.ts'
import { createControlPlaneHandler, MANAGEMENT_API_PATH } from '#local/control-plane-handler.ts'
import { controlSecretCredentials } from '#local/control-plane-secret.ts'
import { ControlPlaneStore } from '#local/control-plane-store.ts'
import {
  CLI_CALL_RATE,
  KeyAdmin,
  KeyAdminError,
  type KeyAdminOptions,
} from '#ops/key-admin-service.ts'
import { stageOutputsFrom } from '#ops/stack-outputs-reader.ts'
import type { MirrorView, StageSync } from '#ops/stage-sync-client.ts'
import { DEFAULT_ENTERPRISE_LIMITS, PLAN_TAGS } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'

/**
 * What `npm run keys` does to a stage, against the emulated control plane through the real AWS
 * SDK (as against API Gateway), with a key sync made of the real key source and an in-memory
 * mirror, and a fake clock: every call it makes, what it waits for, how it paces itself, and
 * the ceilings it warns about.
 */
const START = Date.UTC(2026, 10, 22, 12, 0, 0)

let now: number
let sleeps: number[]
let server: Server
let store: ControlPlaneStore
let client: APIGatewayClient
let sync: MirrorSync
let warnings: string[]

const sleep = async (ms: number) => {
  sleeps.push(ms)
  now += ms
}

const IDLE_RESULT: KeySyncResult = { skipped: false, ...NOTHING_DONE }

/** The key sync reduced to what the CLI sees of it: a run, then the mirror it leaves. */
class MirrorSync implements StageSync {
  mirror = new Map<string, MirrorView>()
  /** Results to answer with instead of a run (a run in progress, a held removal...). */
  scripted: Partial<KeySyncResult>[] = []
  runs = 0
  constructor(readonly source: ApiGatewayKeySource) {}

  async run(): Promise<KeySyncResult> {
    this.runs += 1
    const scripted = this.scripted.shift()
    if (scripted) return { ...IDLE_RESULT, ...scripted }
    const { entries } = await this.source.read()
    this.mirror = new Map(entries.map((entry) => [entry.keyHash, entry]))
    return IDLE_RESULT
  }

  async mirrored(keyHash: string) {
    return this.mirror.get(keyHash)
  }
}

const SECRET = 'key-admin-service-test-secret-0123456789'

beforeEach(async () => {
  now = START
  sleeps = []
  warnings = []
  store = await ControlPlaneStore.open(':memory:', { clock: () => now })
  await bootstrapControlPlane(store, {
    dataDir: ':memory:',
    apiKeys: [],
    enterpriseLimits: DEFAULT_ENTERPRISE_LIMITS,
  })
  server = createServer(
    createControlPlaneHandler({
      store,
      flushAuthorizerCache: () => undefined,
      usedToday: () => 0,
      runKeySync: () => Promise.reject(new Error('unused')),
      mirrorItem: async () => undefined,
      outputs: () => ({}),
      clock: () => now,
      secret: SECRET,
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  client = new APIGatewayClient({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}${MANAGEMENT_API_PATH}`,
    region: 'eu-west-1',
    credentials: controlSecretCredentials(SECRET),
  })
  sync = new MirrorSync(
    new ApiGatewayKeySource({ client, restApiId: 'local', stage: 'local', clock: () => now }),
  )
})
afterEach(async () => {
  client.destroy()
  await new Promise((resolve) => server.close(resolve))
})

const adminWith = (options: Partial<KeyAdminOptions> = {}) =>
  new KeyAdmin({
    client,
    outputs: stageOutputsFrom(localOutputs(store, 'http://127.0.0.1/v1'), 'the test stage'),
    sync,
    stage: 'local',
    region: 'eu-west-1',
    clock: () => now,
    sleep,
    mirrorWaitMs: 10_000,
    warn: (message) => warnings.push(message),
    ...options,
  })

const planIdOf = (name: string) =>
  store.usagePlans().find((plan) => plan.name === name)?.id as string

describe('keys CLI operations', () => {
  it('creates a key on a plan and returns only once the mirror grants it', async () => {
    const key = await adminWith().createKey({ selector: { plan: 'pro' }, name: 'alice' })
    expect(key).toMatchObject({
      name: 'alice',
      plan: 'pro',
      limits: { perMinute: 300, perDay: 10_000 },
    })
    expect(sync.mirror.get(hashApiKey(key.value))).toMatchObject({
      keyId: key.id,
      plan: 'pro',
      usagePlanId: planIdOf('petstore-local-pro'),
    })
    expect(store.apiKey(key.id)).toMatchObject({ name: 'alice', enabled: true })
  })

  it('deletes a key it could not attach, so none lingers towards the ceiling', async () => {
    const failing = {
      send: (command: unknown) =>
        command instanceof CreateUsagePlanKeyCommand
          ? Promise.reject(new Error('attach failed'))
          : client.send(command as GetApiKeyCommand),
    } as unknown as APIGatewayClient
    const keysBefore = store.apiKeys().length
    await expect(
      adminWith({ client: failing }).createKey({ selector: { plan: 'free' }, name: 'orphan' }),
    ).rejects.toThrow('attach failed')
    expect(store.apiKeys()).toHaveLength(keysBefore)
  })

  it('disables, enables and revokes, each in force when it returns', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'free' }, name: 'bob' })
    const hash = hashApiKey(key.value)
    expect(await admin.setEnabled(key.id, false)).toMatchObject({ works: false })
    expect(sync.mirror.has(hash)).toBe(false)
    expect(await admin.setEnabled('bob', true)).toMatchObject({ works: true, plan: 'free' })
    expect(sync.mirror.has(hash)).toBe(true)
    await admin.revoke(key.id)
    expect(sync.mirror.has(hash)).toBe(false)
    await expect(admin.revoke(key.id)).rejects.toThrow(KeyAdminError)
  })

  it('finds a key by its name only when the name is unique', async () => {
    const admin = adminWith()
    const first = await admin.createKey({ selector: { plan: 'free' }, name: 'twin' })
    const second = await admin.createKey({ selector: { plan: 'free' }, name: 'twin' })
    await expect(admin.revoke('twin')).rejects.toThrow(
      `2 keys are named twin: use an id (${first.id}, ${second.id})`,
    )
  })

  it('moves a key to another plan and a per-customer Enterprise plan, limits and all', async () => {
    const admin = adminWith()
    const plan = await admin.createCustomerPlan({
      customer: 'acme',
      perMinute: 20_000,
      perDay: 5_000_000,
    })
    const stored = await client.send(new GetUsagePlanCommand({ usagePlanId: plan.id }))
    expect(stored).toMatchObject({
      name: 'petstore-local-enterprise-acme',
      apiStages: [{ apiId: 'local', stage: 'local' }],
      throttle: { rateLimit: 20_000 / 30, burstLimit: 40_000 },
      quota: { limit: 15_000_000, period: 'DAY' },
      tags: {
        [PLAN_TAGS.plan]: 'enterprise',
        [PLAN_TAGS.perMinute]: '20000',
        [PLAN_TAGS.perDay]: '5000000',
        'petstore:customer': 'acme',
        project: 'petstore',
        'petstore:stage': 'local',
      },
    })
    await expect(
      admin.createCustomerPlan({ customer: 'acme', perMinute: 1, perDay: 1 }),
    ).rejects.toThrow(`Customer acme already has plan ${plan.id}`)
    await expect(
      admin.createCustomerPlan({ customer: 'Acme Corp', perMinute: 1, perDay: 1 }),
    ).rejects.toThrow(KeyAdminError)

    const key = await admin.createKey({ selector: { plan: 'pro' }, name: 'carol' })
    expect(await admin.move(key.id, { plan: 'business' })).toMatchObject({
      from: 'pro',
      to: 'business',
    })
    expect(sync.mirror.get(hashApiKey(key.value))).toMatchObject({
      plan: 'business',
      perMinute: 1_000,
    })
    await admin.move(key.id, { customer: 'acme' })
    expect(sync.mirror.get(hashApiKey(key.value))).toMatchObject({
      plan: 'enterprise',
      perMinute: 20_000,
      perDay: 5_000_000,
      usagePlanId: plan.id,
    })
    await expect(admin.move(key.id, { customer: 'acme' })).rejects.toThrow('already on')
    await expect(admin.move(key.id, { customer: 'globex' })).rejects.toThrow(
      'No plan enterprise:globex on stage local',
    )
  })

  it('rotates: both keys work, the old one until its overlap ends, and only then', async () => {
    const admin = adminWith()
    const old = await admin.createKey({ selector: { plan: 'business' }, name: 'dave' })
    const rotated = await admin.rotate(old.id, { overlapMs: 24 * 3_600_000 })
    expect(rotated.created).toMatchObject({ name: 'dave', plan: 'business' })
    expect(rotated.disableAfter).toBe(new Date(now + 24 * 3_600_000).toISOString())
    expect(store.apiKey(old.id).tags).toEqual({ [DISABLE_AFTER_TAG]: rotated.disableAfter })
    expect(store.apiKey(rotated.created.id).tags).toEqual({ 'petstore:rotatedFrom': old.id })
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
    expect(sync.mirror.has(hashApiKey(rotated.created.value))).toBe(true)

    now = Date.parse(rotated.disableAfter as string) - 1
    await sync.run()
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
    now += 1
    await sync.run()
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(false)
    expect(sync.mirror.has(hashApiKey(rotated.created.value))).toBe(true)
  })

  it('rotates without an overlap: the old key works until it is revoked', async () => {
    const admin = adminWith()
    const old = await admin.createKey({ selector: { plan: 'free' }, name: 'erin' })
    const rotated = await admin.rotate(old.id)
    expect(rotated.disableAfter).toBeUndefined()
    expect(store.apiKey(old.id).tags).toEqual({})
    now += 365 * 86_400_000
    await sync.run()
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
  })

  it('lists the stage keys with plan, state, creation and today; other keys only as a count', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'pro' }, name: 'frank' })
    await store.createApiKey({ name: 'elsewhere', enabled: true })
    const { rows, otherKeys } = await admin.listKeys()
    expect(rows.find((row) => row.id === key.id)).toEqual({
      id: key.id,
      name: 'frank',
      plan: 'pro',
      enabled: true,
      createdDate: new Date(START),
      usedToday: 0,
      disableAfter: undefined,
    })
    expect(rows.map((row) => row.plan).sort()).toEqual([
      'business',
      'enterprise',
      'free',
      'pro',
      'pro',
    ])
    expect(otherKeys).toBe(1)
  })

  it('still lists the keys when usage cannot be read, saying why the column is empty', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'free' }, name: 'grace' })
    // What an emulator without GetUsage answers (moto: an HTML 404 the SDK cannot parse).
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetUsageCommand') {
          throw Object.assign(new Error('Unexpected token <'), {
            name: 'SyntaxError',
            $metadata: { httpStatusCode: 404 },
          })
        }
        return next(args)
      },
      { step: 'initialize' },
    )
    const { rows, usageUnavailable } = await admin.listKeys()
    expect(rows.find((row) => row.id === key.id)).toMatchObject({
      plan: 'free',
      usedToday: undefined,
    })
    expect(rows.every((row) => row.usedToday === undefined)).toBe(true)
    expect(usageUnavailable).toBe('GetUsage failed (SyntaxError, HTTP 404)')
  })
})

describe('waiting for the mirror', () => {
  it('runs the sync again when a run in progress could predate the change', async () => {
    sync.scripted = [{ skipped: 'lease-held' }]
    await adminWith().createKey({ selector: { plan: 'free' }, name: 'later' })
    expect(sync.runs).toBe(2)
    expect(sleeps).toEqual([2_000])
  })

  it('runs the sync again after a failed run, and says so when runs keep failing', async () => {
    const read = sync.run.bind(sync)
    let failures = 1
    sync.run = async () => {
      if (failures > 0) {
        failures -= 1
        throw new Error('Inconsistent read of API Gateway')
      }
      return read()
    }
    const key = await adminWith().createKey({ selector: { plan: 'free' }, name: 'eventually' })
    expect(sync.mirror.has(hashApiKey(key.value))).toBe(true)
    expect(sleeps).toEqual([2_000])

    failures = Number.POSITIVE_INFINITY
    await expect(adminWith().revoke(key.id)).rejects.toThrow(
      'The change is made in API Gateway, but the key sync failed (Inconsistent read of API Gateway)',
    )
    expect(store.apiKeys().some((candidate) => candidate.id === key.id)).toBe(false)
  })

  it('says when the sync holds back a mass removal, and when the mirror never shows the change', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'free' }, name: 'held' })
    // A run that withholds removals (as the guard does) and leaves the mirror as it was.
    sync.run = async () => ({ ...IDLE_RESULT, heldRemovals: 11 })
    await expect(admin.revoke(key.id)).rejects.toThrow('holds back a mass removal of 11 keys')

    const other = await store.createApiKey({ name: 'stuck', enabled: true })
    await store.attachKey(planIdOf('petstore-local-free'), other.id)
    sync.run = async () => IDLE_RESULT
    sync.mirror.set(hashApiKey(other.value), {
      keyId: other.id,
      plan: 'free',
      perMinute: 60,
      perDay: 1_000,
      usagePlanId: 'x',
    })
    const started = now
    await expect(admin.revoke(other.id)).rejects.toThrow(
      'The change is made in API Gateway, but the key mirror did not show it within 10 s',
    )
    expect(now - started).toBeGreaterThanOrEqual(10_000)
  })
})

describe('pacing and ceilings', () => {
  it('stays within its share of the management API quota', async () => {
    const times: number[] = []
    const bucket = new TokenBucketPacer({ ...CLI_CALL_RATE, clock: () => now, sleep })
    const admin = adminWith({
      pacer: {
        take: async () => {
          await bucket.take()
          times.push(now)
        },
      },
    })
    await admin.createKey({ selector: { plan: 'pro' }, name: 'paced' })
    await admin.listKeys()
    await admin.rotate('paced', { overlapMs: 60_000 })
    expect(times.length).toBe(admin.calls)
    expect(admin.calls).toBeGreaterThan(20)
    // In any stretch of time, no more calls than the burst plus the rate allow (the fake clock
    // sums fractions of milliseconds: a thousandth of a call is rounding).
    for (let i = 0; i < times.length; i += 1) {
      for (let j = i; j < times.length; j += 1) {
        const allowed =
          CLI_CALL_RATE.burst +
          (CLI_CALL_RATE.perSecond * ((times[j] as number) - (times[i] as number))) / 1000
        expect(j - i + 1).toBeLessThanOrEqual(allowed + 1e-3)
      }
    }
  })

  it('warns near 10,000 API keys and 300 usage plans, and refuses at them before calling', async () => {
    while (store.apiKeys().length < 9_000) await store.createApiKey({ name: 'filler' })
    await adminWith().createKey({ selector: { plan: 'free' }, name: 'near' })
    expect(warnings).toEqual([
      expect.stringContaining(
        "9,000 API keys in this Region of API Gateway's 10,000, a quota AWS does not raise",
      ),
    ])
    while (store.apiKeys().length < 10_000) await store.createApiKey({ name: 'filler' })
    const admin = adminWith()
    const callsBefore = admin.calls
    await expect(admin.createKey({ selector: { plan: 'free' }, name: 'over' })).rejects.toThrow(
      "API Gateway's ceiling, which AWS does not raise",
    )
    const { items = [] } = await client.send(new GetApiKeysCommand({ nameQuery: 'over' }))
    expect(items).toEqual([])
    expect(admin.calls).toBeGreaterThan(callsBefore)

    warnings = []
    while (store.usagePlans().length < 280) await store.createUsagePlan({ name: 'other-api' })
    await adminWith().createCustomerPlan({ customer: 'initech', perMinute: 10, perDay: 100 })
    expect(warnings).toContainEqual(
      expect.stringContaining("280 usage plans in this Region of API Gateway's 300"),
    )
    while (store.usagePlans().length < 300) await store.createUsagePlan({ name: 'other-api' })
    await expect(
      adminWith().createCustomerPlan({ customer: 'hooli', perMinute: 10, perDay: 100 }),
    ).rejects.toThrow('ask for more through Service Quotas')
  })
})
