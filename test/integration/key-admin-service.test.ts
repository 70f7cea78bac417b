import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import {
  APIGatewayClient,
  CreateUsagePlanKeyCommand,
  type GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanCommand,
  TooManyRequestsException,
} from '@aws-sdk/client-api-gateway'
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { mockClient } from 'aws-sdk-client-mock'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ApiGatewayKeySource, InconsistentKeyReadError } from '#keys/api-gateway-key-source.ts'
import { TokenBucketPacer } from '#keys/call-pacer.ts'
import { type KeySyncResult, NOTHING_DONE } from '#keys/key-sync-contract.ts'
import { DISABLE_AFTER_TAG } from '#keys/key-verdicts.ts'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import {
  bootstrapControlPlane,
  localOutputs,
} from '#local/control-plane/control-plane-bootstrap.ts'
import {
  createControlPlaneHandler,
  MANAGEMENT_API_PATH,
} from '#local/control-plane/control-plane-handler.ts'
import { ControlPlaneStore } from '#local/control-plane/control-plane-store.ts'
import { KeyAdminError } from '#ops/keys/key-admin-error.ts'
import { CLI_CALL_RATE, KeyAdmin } from '#ops/keys/key-admin-service.ts'
import type { KeyAdminOptions } from '#ops/keys/management-calls.ts'
import { permissionPattern } from '#ops/keys/management-permissions-config.ts'
import {
  AwsStageSync,
  type MirrorView,
  type StageSync,
  SyncFailure,
} from '#ops/keys/stage-sync-client.ts'
import { stageOutputsFrom } from '#ops/stage/stack-outputs-reader.ts'
import { DEFAULT_ENTERPRISE_LIMITS, PLAN_TAGS } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { ROOT } from '#test/support/local-server.ts'
import { TEST_MAC_SECRETS } from '#test/support/test-key-store.ts'

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
  /** The ids each run was asked to read first. */
  readonly named: (readonly string[])[] = []
  constructor(readonly source: ApiGatewayKeySource) {}

  async run(ids: readonly string[]): Promise<KeySyncResult> {
    this.runs += 1
    this.named.push(ids)
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
    macSecrets: TEST_MAC_SECRETS,
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
    macSecrets: async () => TEST_MAC_SECRETS,
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

  it('names the key and plan ids each change touched to the sync, which reads them first', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'pro' }, name: 'named' })
    const pro = planIdOf('petstore-local-pro')
    const free = planIdOf('petstore-local-free')
    expect(sync.named.at(-1)).toEqual([key.id, pro])
    await admin.move(key.id, { plan: 'free' })
    expect(sync.named.at(-1)).toEqual([key.id, free, pro])
    await admin.setEnabled(key.id, false)
    expect(sync.named.at(-1)).toEqual([key.id])
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

  it("refuses a customer plan above the largest plan the stage's edge rules allow, naming the setting", async () => {
    const outputs = {
      ...stageOutputsFrom(localOutputs(store, 'http://127.0.0.1/v1'), 'the test stage'),
      largestPlanPerMinute: 50_000,
    }
    const admin = adminWith({ outputs, stage: 'production' })
    const plansBefore = store.usagePlans().length
    await expect(
      admin.createCustomerPlan({ customer: 'huge', perMinute: 60_000, perDay: 10_000_000 }),
    ).rejects.toThrow(
      /above the largest plan stage production allows \(50000\/minute.*production\.largestPlanPerMinute/,
    )
    expect(store.usagePlans()).toHaveLength(plansBefore)
    // At the largest plan and below it, accepted: the per-key edge rule is above it.
    await admin.createCustomerPlan({ customer: 'big', perMinute: 50_000, perDay: 10_000_000 })
    await admin.createCustomerPlan({ customer: 'acme20k', perMinute: 20_000, perDay: 5_000_000 })
    expect(store.usagePlans()).toHaveLength(plansBefore + 2)
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
    await sync.run([])
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
    now += 1
    await sync.run([])
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
    await sync.run([])
    expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
  })

  it('lists the stage keys with plan, limits, state and creation; other keys only as a count', async () => {
    const admin = adminWith()
    const key = await admin.createKey({ selector: { plan: 'pro' }, name: 'frank' })
    await store.createApiKey({ name: 'elsewhere', enabled: true })
    const { rows, otherKeys } = await admin.listKeys()
    expect(rows.find((row) => row.id === key.id)).toEqual({
      id: key.id,
      name: 'frank',
      plan: 'pro',
      planId: stageOutputsFrom(localOutputs(store, 'http://127.0.0.1/v1'), 'the test stage').planIds
        .pro,
      enabled: true,
      createdDate: new Date(START),
      limits: { perMinute: 300, perDay: 10_000 },
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
    sync.run = async (ids) => {
      if (failures > 0) {
        failures -= 1
        throw new InconsistentKeyReadError(['k-missing'])
      }
      return read(ids)
    }
    const key = await adminWith().createKey({ selector: { plan: 'free' }, name: 'eventually' })
    expect(sync.mirror.has(hashApiKey(key.value))).toBe(true)
    expect(sleeps).toEqual([2_000])

    failures = Number.POSITIVE_INFINITY
    await expect(adminWith().revoke(key.id)).rejects.toThrow(
      `Key ${key.id} is revoked (deleted) in API Gateway, but the key sync failed (InconsistentKeyReadError: Inconsistent read of API Gateway`,
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
      `Key ${other.id} is revoked (deleted) in API Gateway, but the key mirror did not show it within 10 s`,
    )
    expect(now - started).toBeGreaterThanOrEqual(10_000)
  })
})

describe('what no retry cures ends the command at once', () => {
  /** The deployed sync step (a Lambda Invoke) against a function that answers `error`. */
  const deployedSyncFailing = (error: Error) => {
    const lambda = new LambdaClient({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    })
    const invokes = mockClient(lambda).on(InvokeCommand).rejects(error)
    return {
      invokes,
      sync: new AwsStageSync({
        lambda,
        functionName: 'petstore-staging-api-KeySync1234',
        mirror: { get: async () => undefined },
        tableName: 'petstore-staging-key-mirror',
      }),
    }
  }

  it.each([
    [
      'a deleted key-sync function',
      Object.assign(new Error('Function not found: petstore-staging-api-KeySync1234'), {
        name: 'ResourceNotFoundException',
        $metadata: { httpStatusCode: 404 },
      }),
      'No key-sync function petstore-staging-api-KeySync1234 in this account and Region (ResourceNotFoundException, HTTP 404',
    ],
    [
      'a role that may not invoke it',
      Object.assign(new Error('not authorized to perform: lambda:InvokeFunction'), {
        name: 'AccessDeniedException',
        $metadata: { httpStatusCode: 403 },
      }),
      'add lambda:InvokeFunction on petstore-staging-api-KeySync1234 to your role',
    ],
  ])('%s: one try, the cause and the fix, the key id', async (_, error, fix) => {
    const key = await adminWith().createKey({ selector: { plan: 'free' }, name: 'tess' })
    const { invokes, sync: deployed } = deployedSyncFailing(error)
    const failure = await adminWith({ sync: deployed, mirrorWaitMs: 90_000 })
      .setEnabled(key.id, false)
      .catch((caught: Error) => caught)
    expect((failure as Error).message).toContain(`Key ${key.id} is disabled in API Gateway, but`)
    expect((failure as Error).message).toContain(fix)
    expect(invokes.commandCalls(InvokeCommand)).toHaveLength(1)
    expect(sleeps).toEqual([])
    expect(store.apiKey(key.id).enabled).toBe(false)
  })

  it('retries a throttled invoke within the wait', async () => {
    const key = await adminWith().createKey({ selector: { plan: 'free' }, name: 'tom' })
    const run = sync.run.bind(sync)
    let throttles = 2
    sync.run = async (ids) => {
      if (throttles-- > 0) throw new SyncFailure('Lambda throttled the key sync', true)
      return run(ids)
    }
    expect(await adminWith().setEnabled(key.id, false)).toMatchObject({ works: false })
    expect(sleeps).toEqual([2_000, 2_000])
  })

  it('names the IAM action and resource of a refused management call', async () => {
    const key = await adminWith().createKey({ selector: { plan: 'free' }, name: 'uri' })
    const admin = adminWith({
      client: withFaults([{ operation: 'UpdateApiKey', kind: 'refused' }], new AbortController()),
    })
    await expect(admin.setEnabled(key.id, false)).rejects.toThrow(
      `API Gateway refused UpdateApiKey (AccessDeniedException, HTTP 403: User is not authorized to perform this action): add apigateway:PATCH on arn:aws:apigateway:eu-west-1::/apikeys/${key.id} to your role`,
    )
    expect(store.apiKey(key.id).enabled).toBe(true)
  })
})

describe('paging', () => {
  it('fails, naming the listing, when a page position repeats instead of listing part of it', async () => {
    await adminWith().createKey({ selector: { plan: 'free' }, name: 'page' })
    const repeating = {
      send: async (command: GetApiKeyCommand) => {
        const answer = await client.send(command)
        // A listing whose every page points at the same next page.
        return command instanceof GetApiKeysCommand ? { ...answer, position: '500' } : answer
      },
    } as unknown as APIGatewayClient
    await expect(adminWith({ client: repeating }).listKeys()).rejects.toThrow(
      "API Gateway's API keys (GetApiKeys) listing answered page 2 with a position it gave before",
    )
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
    await admin.rotate('paced', { overlapMs: 300_000 })
    expect(times.length).toBe(admin.calls)
    expect(admin.calls).toBeGreaterThan(15)
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

/** What API Gateway answers a call over the account's management quota, and a call refused. */
const throttled = () =>
  new TooManyRequestsException({ message: 'Too Many Requests', $metadata: { httpStatusCode: 429 } })
const refused = () =>
  Object.assign(new Error('User is not authorized to perform this action'), {
    name: 'AccessDeniedException',
    $metadata: { httpStatusCode: 403 },
  })

interface Fault {
  /** The management operation, e.g. TagResource. */
  operation: string
  /** The error its calls answer, or `interrupt`: the call is made, then Ctrl-C arrives. */
  kind: 'throttled' | 'refused' | 'interrupt'
  /** How many calls of the operation fail (default 1). */
  times?: number
}

/**
 * The control plane's client with faults: every `operation` call (up to `times`) fails the way
 * `kind` says, or is made and followed by an abort (Ctrl-C during that call). The key sync keeps
 * its own client, as the deployed function does.
 */
const withFaults = (faults: Fault[], interrupt: AbortController) => {
  const left = new Map(faults.map((fault) => [fault, fault.times ?? 1]))
  return {
    send: async (command: { constructor: { name: string } }) => {
      const name = command.constructor.name.replace(/Command$/, '')
      const fault = faults.find((candidate) => candidate.operation === name)
      if (fault && (left.get(fault) ?? 0) > 0) {
        left.set(fault, (left.get(fault) ?? 0) - 1)
        if (fault.kind === 'throttled') throw throttled()
        if (fault.kind === 'refused') throw refused()
        const answer = await client.send(command as GetApiKeyCommand)
        interrupt.abort()
        return answer
      }
      return client.send(command as GetApiKeyCommand)
    },
  } as unknown as APIGatewayClient
}

const planOf = (keyId: string) => store.plansOfKey(keyId).map((plan) => plan.name)

describe('a rotation interrupted or refused at any step', () => {
  const OVERLAP = 24 * 3_600_000

  /** A key on Business, rotated through faulty calls; what each step left. */
  const rotateWith = async (faults: Fault[], { earlierEnd }: { earlierEnd?: string } = {}) => {
    const old = await adminWith().createKey({ selector: { plan: 'business' }, name: 'zoe' })
    if (earlierEnd) await store.tag(`/apikeys/${old.id}`, { [DISABLE_AFTER_TAG]: earlierEnd })
    const keysBefore = store.apiKeys().map((key) => key.id)
    const interrupt = new AbortController()
    const handedOut: { id: string; value: string }[] = []
    const outcome = await adminWith({
      client: withFaults(faults, interrupt),
      signal: interrupt.signal,
    })
      .rotate(old.id, { overlapMs: OVERLAP, onCreated: (key) => handedOut.push(key) })
      .then(
        () => 'done',
        (error: Error) => error.message,
      )
    const created = store.apiKeys().filter((key) => !keysBefore.includes(key.id))
    return { old, outcome, handedOut, created }
  }

  it.each([
    ['CreateApiKey', 'throttled'],
    ['CreateApiKey', 'refused'],
    ['TagResource', 'throttled'],
    ['TagResource', 'refused'],
    ['CreateUsagePlanKey', 'throttled'],
    ['CreateUsagePlanKey', 'refused'],
    ['CreateApiKey', 'interrupt'],
    ['TagResource', 'interrupt'],
  ] as const)(
    '%s %s: the old state, the new key deleted, the old key without an end',
    async (operation, kind) => {
      const { old, outcome, handedOut, created } = await rotateWith([{ operation, kind }])
      expect(created).toEqual([])
      expect(store.apiKey(old.id).tags).toEqual({})
      expect(planOf(old.id)).toEqual(['petstore-local-business'])
      expect(sync.mirror.has(hashApiKey(old.value))).toBe(true)
      expect(outcome).toContain(`Rotation of key ${old.id} stopped (`)
      expect(outcome).toContain(`nothing changed: key ${old.id} works as before, with no new key`)
      expect(outcome).toContain(
        kind === 'interrupt' ? 'interrupted (SIGINT or SIGTERM) before' : `${operation} failed`,
      )
      if (kind === 'refused' && operation !== 'CreateApiKey') {
        expect(outcome).toContain(`add apigateway:`)
      }
      // A key that existed for a moment was handed out, and the message says it is void.
      for (const key of handedOut) {
        expect(outcome).toContain(`deleted the new key ${key.id}`)
        expect(outcome).toContain(`discard the value printed for key ${key.id}`)
        expect(outcome).not.toContain(key.value)
      }
      expect(handedOut).toHaveLength(operation === 'CreateApiKey' && kind !== 'interrupt' ? 0 : 1)
    },
  )

  it('puts back an end the old key already had', async () => {
    const earlierEnd = new Date(now + 3_600_000).toISOString()
    const { old, outcome } = await rotateWith(
      [{ operation: 'CreateUsagePlanKey', kind: 'throttled' }],
      { earlierEnd },
    )
    expect(store.apiKey(old.id).tags).toEqual({ [DISABLE_AFTER_TAG]: earlierEnd })
    expect(outcome).toContain(`put back key ${old.id}'s earlier end ${earlierEnd}`)
  })

  it('interrupted while waiting for the mirror: the new state, the value handed out, both ids named', async () => {
    const old = await adminWith().createKey({ selector: { plan: 'pro' }, name: 'yuri' })
    const interrupt = new AbortController()
    sync.scripted = [{ skipped: 'lease-held' }]
    const run = sync.run.bind(sync)
    sync.run = async (ids) => {
      interrupt.abort()
      return run(ids)
    }
    const handedOut: { id: string; value: string }[] = []
    const error = await adminWith({ signal: interrupt.signal })
      .rotate(old.id, { overlapMs: OVERLAP, onCreated: (key) => handedOut.push(key) })
      .catch((failure: Error) => failure)
    const [fresh] = handedOut
    expect(fresh).toBeDefined()
    const newId = fresh?.id as string
    expect(store.apiKey(newId).value).toBe(fresh?.value)
    expect(planOf(newId)).toEqual(['petstore-local-pro'])
    const disableAfter = new Date(START + OVERLAP).toISOString()
    expect(store.apiKey(old.id).tags).toEqual({ [DISABLE_AFTER_TAG]: disableAfter })
    expect((error as Error).message).toBe(
      `Key ${newId} is created on pro to replace key ${old.id}, which works until ${disableAfter}, in API Gateway, but interrupted (SIGINT or SIGTERM) before the key mirror showed it: the scheduled sync (every minute) brings it into force by itself`,
    )
    expect(sleeps).toEqual([])
  })

  it('says what is left when undoing fails too, naming the key ids and the fix', async () => {
    const { old, outcome, handedOut } = await rotateWith([
      { operation: 'CreateUsagePlanKey', kind: 'refused' },
      { operation: 'DeleteApiKey', kind: 'throttled', times: 9 },
      { operation: 'UntagResource', kind: 'refused' },
    ])
    const newId = handedOut[0]?.id as string
    expect(outcome).toContain('could not be undone fully')
    expect(outcome).toContain(
      `key ${newId} still exists, on no plan or on business (npm run keys -- revoke ${newId})`,
    )
    expect(outcome).toMatch(
      new RegExp(`key ${old.id} stops working at \\S+ \\(remove its tag petstore:disableAfter`),
    )
    expect(store.apiKey(newId).id).toBe(newId)
    expect(planOf(newId)).toEqual([])
  })

  it.each([
    ['a minute', 60_000],
    ['more than a year', 366 * 86_400_000],
    ['past the date range', 9e15],
  ])('refuses an overlap of %s before any call', async (_, overlapMs) => {
    const old = await adminWith().createKey({ selector: { plan: 'free' }, name: 'xena' })
    const keys = store.apiKeys().length
    const admin = adminWith()
    await expect(admin.rotate(old.id, { overlapMs })).rejects.toThrow(
      '--overlap must be from 5m to 365d: nothing changed',
    )
    expect(admin.calls).toBe(0)
    expect(store.apiKeys()).toHaveLength(keys)
    expect(store.apiKey(old.id).tags).toEqual({})
  })
})

describe('a move interrupted or refused at any step', () => {
  const moveWith = async (faults: Fault[]) => {
    const key = await adminWith().createKey({ selector: { plan: 'pro' }, name: 'walt' })
    const interrupt = new AbortController()
    const outcome = await adminWith({
      client: withFaults(faults, interrupt),
      signal: interrupt.signal,
    })
      .move(key.id, { plan: 'business' })
      .then(
        () => 'done',
        (error: Error) => error.message,
      )
    return { key, outcome }
  }

  it.each([
    ['DeleteUsagePlanKey', 'throttled'],
    ['DeleteUsagePlanKey', 'refused'],
  ] as const)('%s %s: nothing changed', async (operation, kind) => {
    const { key, outcome } = await moveWith([{ operation, kind }])
    expect(planOf(key.id)).toEqual(['petstore-local-pro'])
    expect(outcome).toContain(`Move of key ${key.id} to business stopped (${operation} failed`)
    expect(outcome).toContain(`nothing changed, key ${key.id} is on pro as before`)
  })

  it.each([
    ['CreateUsagePlanKey', 'throttled'],
    ['CreateUsagePlanKey', 'refused'],
    ['DeleteUsagePlanKey', 'interrupt'],
  ] as const)('%s %s: the key goes back on its old plan', async (operation, kind) => {
    const { key, outcome } = await moveWith([{ operation, kind }])
    expect(planOf(key.id)).toEqual(['petstore-local-pro'])
    expect(outcome).toContain(`Move of key ${key.id} to business stopped (`)
    expect(outcome).toContain(`the CLI put key ${key.id} back on pro: nothing changed`)
    if (kind === 'refused') {
      expect(outcome).toMatch(
        /add apigateway:POST on arn:aws:apigateway:eu-west-1::\/usageplans\/\w+\/keys to your role/,
      )
    }
  })

  it('a call that was applied though its answer was lost: the new state, said so', async () => {
    const key = await adminWith().createKey({ selector: { plan: 'pro' }, name: 'vera' })
    const lost = {
      send: async (command: GetApiKeyCommand) => {
        const answer = await client.send(command)
        if (command instanceof CreateUsagePlanKeyCommand) throw throttled()
        return answer
      },
    } as unknown as APIGatewayClient
    await expect(adminWith({ client: lost }).move(key.id, { plan: 'business' })).rejects.toThrow(
      `but API Gateway applied it: key ${key.id} is on business`,
    )
    expect(planOf(key.id)).toEqual(['petstore-local-business'])
  })

  it('names a key left on no plan when putting it back fails too', async () => {
    const { key, outcome } = await moveWith([
      { operation: 'CreateUsagePlanKey', kind: 'throttled', times: 9 },
    ])
    expect(planOf(key.id)).toEqual([])
    expect(outcome).toContain(
      `could not be undone: key ${key.id} is on no plan of stage local and gets 401 (npm run keys -- move ${key.id} --plan pro puts it back)`,
    )
  })

  it('interrupted while waiting for the mirror: the new state, said so', async () => {
    const key = await adminWith().createKey({ selector: { plan: 'pro' }, name: 'uma' })
    const interrupt = new AbortController()
    sync.run = async () => {
      interrupt.abort()
      return { ...IDLE_RESULT, skipped: 'lease-held' }
    }
    await expect(
      adminWith({ signal: interrupt.signal }).move(key.id, { plan: 'business' }),
    ).rejects.toThrow(
      `Key ${key.id} is moved from pro to business in API Gateway, but interrupted (SIGINT or SIGTERM) before the key mirror showed it`,
    )
    expect(planOf(key.id)).toEqual(['petstore-local-business'])
  })
})

describe('the IAM table of docs/operations.md', () => {
  /** The table's `apigateway:…` patterns in the row of a command. */
  const documented = (command: string): string[] => {
    const docs = readFileSync(resolve(ROOT, 'docs/operations.md'), 'utf8')
    const table = docs.slice(docs.indexOf('### IAM permissions'))
    const row = table.split('\n').find((line) => line.startsWith(`| ${command} |`))
    expect(row, command).toBeDefined()
    return [
      ...new Set(
        [...(row ?? '').matchAll(/`(apigateway:[A-Z]+ [^`]+)`/g)].map((m) => m[1] as string),
      ),
    ].sort()
  }

  it('names exactly the management calls each command makes, undoing included', async () => {
    const made = new Map<string, Set<string>>()
    const recording = (command: string, faults: Fault[] = []) => {
      const inner = withFaults(faults, new AbortController())
      return adminWith({
        client: {
          send: (call: { constructor: { name: string } }) => {
            const patterns = permissionPattern(call.constructor.name)
            expect(patterns, call.constructor.name).not.toEqual([])
            const seen = made.get(command) ?? new Set<string>()
            for (const pattern of patterns) seen.add(pattern)
            made.set(command, seen)
            return inner.send(call as GetApiKeyCommand)
          },
        } as unknown as APIGatewayClient,
      })
    }
    const attachRefused: Fault[] = [{ operation: 'CreateUsagePlanKey', kind: 'refused' }]
    const key = await recording('`create`').createKey({ selector: { plan: 'pro' }, name: 'iam' })
    await recording('`create`', attachRefused)
      .createKey({ selector: { plan: 'pro' }, name: 'iam-undone' })
      .catch(() => undefined)
    await recording('`list`').listKeys()
    await recording('`disable`, `enable`').setEnabled(key.id, false)
    await recording('`disable`, `enable`').setEnabled(key.id, true)
    await recording('`move`').move(key.id, { plan: 'business' })
    await recording('`move`', [{ operation: 'CreateUsagePlanKey', kind: 'throttled' }])
      .move(key.id, { plan: 'pro' })
      .catch(() => undefined)
    const { created } = await recording('`rotate`').rotate(key.id, { overlapMs: 3_600_000 })
    // A key without an end yet: undoing removes the end it wrote (UntagResource).
    await recording('`rotate`', attachRefused)
      .rotate(created.id, { overlapMs: 3_600_000 })
      .catch(() => undefined)
    await recording('`plan create`').createCustomerPlan({
      customer: 'iam',
      perMinute: 10,
      perDay: 100,
    })
    await recording('`plan list`').listPlans()
    await recording('`show`').listKeys()
    await recording('`show`').mirrored(key.id)
    await recording('`revoke`').revoke(key.id)
    expect(made.size).toBe(9)
    for (const [command, patterns] of made) {
      expect(documented(command), command).toEqual([...patterns].sort())
    }
  })
})
