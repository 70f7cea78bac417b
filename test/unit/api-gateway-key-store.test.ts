import { randomBytes } from 'node:crypto'
import {
  APIGatewayClient,
  type ApiKey,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  type UsagePlan,
} from '@aws-sdk/client-api-gateway'
import { mockClient } from 'aws-sdk-client-mock'
import { beforeEach, describe, expect, it } from 'vitest'
import {
  ApiGatewayKeyStore,
  enterpriseLimitsFromEnv,
  KEY_SNAPSHOT_TTL_MS,
  MAX_STALE_MS,
  MIN_REFRESH_INTERVAL_MS,
} from '#functions/authorizer/api-gateway-key-store.ts'
import type { KeyScope } from '#shared/auth/key-store.ts'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  PLAN_LIMITS,
  USAGE_PLAN_TAG,
} from '#shared/config/plans-config.ts'

const SCOPE: KeyScope = { apiId: 'a1b2c3d4e5', stage: 'production' }
const ENTERPRISE = { perMinute: 7_000, perDay: 2_000_000 }

/** Key values are 20+ characters, as API Gateway requires. */
const value = (name: string) => `${name}-value-0123456789abcdef`

const plan = (
  id: string,
  options: { tag?: string; stage?: string; apiId?: string } & Pick<UsagePlan, 'throttle' | 'quota'>,
): UsagePlan => ({
  id,
  name: id,
  apiStages: [{ apiId: options.apiId ?? SCOPE.apiId, stage: options.stage ?? SCOPE.stage }],
  ...(options.tag ? { tags: { [USAGE_PLAN_TAG]: options.tag } } : {}),
  ...(options.throttle ? { throttle: options.throttle } : {}),
  ...(options.quota ? { quota: options.quota } : {}),
})

type Listing =
  | typeof GetApiKeysCommand
  | typeof GetUsagePlansCommand
  | typeof GetUsagePlanKeysCommand

/**
 * A small API Gateway control plane behind aws-sdk-client-mock: pages of two items, with opaque
 * position tokens. Each request's input is recorded as sent: the SDK paginators reuse one input
 * object across the pages of a listing, so the mock's own call records show only its last state.
 */
class FakeControlPlane {
  keys: ApiKey[] = []
  plans: UsagePlan[] = []
  planKeys: Record<string, string[]> = {}
  failure: Error | undefined
  readonly client = new APIGatewayClient({ region: 'eu-west-1' })
  readonly mock = mockClient(this.client)
  readonly #requests: { command: Listing; input: Record<string, unknown> }[] = []

  constructor() {
    const page = <T>(command: Listing, input: { position?: string }, items: T[]) => {
      this.#requests.push({ command, input: { ...input } })
      if (this.failure) throw this.failure
      const start = input.position === undefined ? 0 : Number(input.position.replace('page-', ''))
      const end = start + 2
      return {
        items: items.slice(start, end),
        ...(end < items.length ? { position: `page-${end}` } : {}),
      }
    }
    this.mock.on(GetApiKeysCommand).callsFake(async (input) =>
      page(
        GetApiKeysCommand,
        input,
        this.keys.map((key) => (input.includeValues ? key : { ...key, value: undefined })),
      ),
    )
    this.mock
      .on(GetUsagePlansCommand)
      .callsFake(async (input) => page(GetUsagePlansCommand, input, this.plans))
    this.mock.on(GetUsagePlanKeysCommand).callsFake(async (input) =>
      page(
        GetUsagePlanKeysCommand,
        input,
        (this.planKeys[input.usagePlanId] ?? []).map((id) => ({ id, type: 'API_KEY' })),
      ),
    )
  }

  addKey(id: string, planId: string | undefined, enabled = true): void {
    this.keys.push({ id, value: value(id), name: id, enabled })
    if (planId) this.planKeys[planId] = [...(this.planKeys[planId] ?? []), id]
  }

  /** The inputs of every request of one listing, as sent, optionally of one usage plan. */
  requests(command: Listing, usagePlanId?: string): Record<string, unknown>[] {
    return this.#requests
      .filter((request) => request.command === command)
      .map((request) => request.input)
      .filter((input) => usagePlanId === undefined || input.usagePlanId === usagePlanId)
  }

  /** Full refreshes so far (each lists the API keys once, from the first page). */
  refreshes(): number {
    return this.requests(GetApiKeysCommand).filter((input) => input.position === undefined).length
  }

  calls(): number {
    return this.mock.calls().length
  }
}

let plane: FakeControlPlane
let now: number
const clock = () => now

const storeOver = (options: Partial<ConstructorParameters<typeof ApiGatewayKeyStore>[0]> = {}) =>
  new ApiGatewayKeyStore({ client: plane.client, clock, enterpriseLimits: ENTERPRISE, ...options })

beforeEach(() => {
  now = Date.parse('2027-03-05T10:00:00Z')
  plane = new FakeControlPlane()
  plane.plans = [
    plan('up-free', {
      tag: 'free',
      throttle: { burstLimit: 60, rateLimit: 1 },
      quota: { limit: 1_000, period: 'DAY' },
    }),
    plan('up-pro', {
      tag: 'pro',
      throttle: { burstLimit: 300, rateLimit: 5 },
      quota: { limit: 10_000, period: 'DAY' },
    }),
    plan('up-business', { tag: 'business' }),
    plan('up-staging', { tag: 'free', stage: 'staging' }),
    plan('up-other-api', { tag: 'pro', apiId: 'zz9y8x7w6v' }),
    // Created in the console for one customer: no tag, its own limits.
    plan('up-acme', {
      throttle: { burstLimit: 2_500, rateLimit: 41 },
      quota: { limit: 500_000, period: 'DAY' },
    }),
    plan('up-globex', {
      tag: 'enterprise',
      quota: { limit: 9_000_000, period: 'WEEK' },
    }),
  ]
  plane.addKey('k-free', 'up-free')
  plane.addKey('k-pro', 'up-pro')
  plane.addKey('k-pro-2', 'up-pro')
  plane.addKey('k-disabled', 'up-pro', false)
  plane.addKey('k-business', 'up-business')
  plane.addKey('k-staging', 'up-staging')
  plane.addKey('k-other-api', 'up-other-api')
  plane.addKey('k-no-plan', undefined)
  plane.addKey('k-acme', 'up-acme')
  plane.addKey('k-globex', 'up-globex')
})

describe('ApiGatewayKeyStore: which keys are valid', () => {
  it('accepts an enabled key attached to a plan of this API stage, with its id, plan and limits', async () => {
    const store = storeOver()
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toEqual({
      id: 'k-pro',
      plan: 'pro',
      limits: { perMinute: 300, perDay: 10_000 },
    })
    await expect(store.lookup(value('k-free'), SCOPE)).resolves.toEqual({
      id: 'k-free',
      plan: 'free',
      limits: { perMinute: 60, perDay: 1_000 },
    })
  })

  it('rejects a disabled key even though it is attached to a plan of this stage', async () => {
    await expect(storeOver().lookup(value('k-disabled'), SCOPE)).resolves.toBeUndefined()
  })

  it('rejects keys attached only to plans of another stage or another API', async () => {
    const store = storeOver()
    await expect(store.lookup(value('k-staging'), SCOPE)).resolves.toBeUndefined()
    await expect(store.lookup(value('k-other-api'), SCOPE)).resolves.toBeUndefined()
    // The same store serves the staging stage from its own snapshot.
    await expect(
      store.lookup(value('k-staging'), { ...SCOPE, stage: 'staging' }),
    ).resolves.toMatchObject({ id: 'k-staging', plan: 'free' })
  })

  it('rejects an enabled key on no plan, and a key API Gateway does not know', async () => {
    const store = storeOver()
    await expect(store.lookup(value('k-no-plan'), SCOPE)).resolves.toBeUndefined()
    await expect(store.lookup(value('never-issued'), SCOPE)).resolves.toBeUndefined()
  })

  it('asks for key values and follows every position token of every listing', async () => {
    const store = storeOver()
    // The last key sits on the last page of keys; its plan on the last page of plans.
    await expect(store.lookup(value('k-globex'), SCOPE)).resolves.toMatchObject({ id: 'k-globex' })
    // A plan whose keys span two pages.
    await expect(store.lookup(value('k-disabled'), SCOPE)).resolves.toBeUndefined()
    await expect(store.lookup(value('k-pro-2'), SCOPE)).resolves.toMatchObject({ id: 'k-pro-2' })

    const keyCalls = plane.requests(GetApiKeysCommand)
    expect(keyCalls.every((input) => input.includeValues === true)).toBe(true)
    // API Gateway's largest page, so a refresh makes as few calls as it can.
    expect(keyCalls.every((input) => input.limit === 500)).toBe(true)
    expect(keyCalls.map((input) => input.position)).toEqual([
      undefined,
      'page-2',
      'page-4',
      'page-6',
      'page-8',
    ])
    expect(plane.requests(GetUsagePlansCommand)).toHaveLength(4)
    const proKeyPages = plane
      .requests(GetUsagePlanKeysCommand, 'up-pro')
      .map((input) => input.position)
    expect(proKeyPages).toEqual([undefined, 'page-2'])
    // Plans of other stages are never listed for keys.
    expect(plane.requests(GetUsagePlanKeysCommand, 'up-staging')).toHaveLength(0)
  })

  it('throws on a lookup without the API stage rather than guessing one', async () => {
    await expect(storeOver().lookup(value('k-pro'))).rejects.toThrow(/API id and stage/)
  })
})

describe('ApiGatewayKeyStore: plans and limits', () => {
  it('takes limits from the plan table when the usage plan sets none', async () => {
    await expect(storeOver().lookup(value('k-business'), SCOPE)).resolves.toEqual({
      id: 'k-business',
      plan: 'business',
      limits: PLAN_LIMITS.business,
    })
  })

  it('treats an untagged plan of this stage as a custom Enterprise plan with its own limits', async () => {
    await expect(storeOver().lookup(value('k-acme'), SCOPE)).resolves.toEqual({
      id: 'k-acme',
      plan: 'enterprise',
      limits: { perMinute: 2_500, perDay: 500_000 },
    })
  })

  it('uses the configured Enterprise limits where an Enterprise plan has no burst or DAY quota', async () => {
    // A WEEK quota is not a per-day limit.
    await expect(storeOver().lookup(value('k-globex'), SCOPE)).resolves.toEqual({
      id: 'k-globex',
      plan: 'enterprise',
      limits: ENTERPRISE,
    })
  })

  it('reads the Enterprise limits from ENTERPRISE_LIMITS, with the shared default when unset', async () => {
    expect(enterpriseLimitsFromEnv({ ENTERPRISE_LIMITS: '7000/2000000' })).toEqual(ENTERPRISE)
    expect(enterpriseLimitsFromEnv({})).toEqual(DEFAULT_ENTERPRISE_LIMITS)
    expect(() => enterpriseLimitsFromEnv({ ENTERPRISE_LIMITS: 'lots' })).toThrow(/perMinute/)

    const store = storeOver({ enterpriseLimits: enterpriseLimitsFromEnv({}) })
    await expect(store.lookup(value('k-globex'), SCOPE)).resolves.toMatchObject({
      limits: DEFAULT_ENTERPRISE_LIMITS,
    })
  })

  it('treats a plan tagged with an unknown plan name as Enterprise', async () => {
    plane.plans.push(plan('up-typo', { tag: 'platinum' }))
    plane.addKey('k-typo', 'up-typo')
    await expect(storeOver().lookup(value('k-typo'), SCOPE)).resolves.toMatchObject({
      plan: 'enterprise',
      limits: ENTERPRISE,
    })
  })
})

describe('ApiGatewayKeyStore: caching and refresh budget', () => {
  it('answers repeated lookups within the TTL without calling API Gateway again', async () => {
    const store = storeOver()
    await store.lookup(value('k-pro'), SCOPE)
    const calls = plane.calls()
    now += KEY_SNAPSHOT_TTL_MS - 1
    for (let i = 0; i < 100; i += 1) {
      await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toMatchObject({ id: 'k-pro' })
      await expect(store.lookup(value('k-free'), SCOPE)).resolves.toMatchObject({ id: 'k-free' })
    }
    expect(plane.calls()).toBe(calls)
  })

  it('refreshes at most once per interval under a flood of 1,000 random tokens', async () => {
    const store = storeOver()
    await store.lookup(value('k-pro'), SCOPE)
    expect(plane.refreshes()).toBe(1)
    const flood = () =>
      Promise.all(
        Array.from({ length: 1_000 }, () =>
          store.lookup(randomBytes(24).toString('base64url'), SCOPE),
        ),
      )

    now += 1_000
    expect((await flood()).every((record) => record === undefined)).toBe(true)
    expect(plane.refreshes()).toBe(1)

    now += MIN_REFRESH_INTERVAL_MS
    await flood()
    expect(plane.refreshes()).toBe(2)

    // Sequential tokens within one interval: still no further refresh.
    for (let i = 0; i < 1_000; i += 1) {
      now += 5
      await store.lookup(randomBytes(24).toString('base64url'), SCOPE)
    }
    expect(plane.refreshes()).toBe(2)
  })

  it('finds a key created after the snapshot once the refresh interval has passed', async () => {
    const store = storeOver()
    await store.lookup(value('k-pro'), SCOPE)
    plane.addKey('k-new', 'up-free')
    now += MIN_REFRESH_INTERVAL_MS - 1
    await expect(store.lookup(value('k-new'), SCOPE)).resolves.toBeUndefined()
    now += 1
    await expect(store.lookup(value('k-new'), SCOPE)).resolves.toMatchObject({ id: 'k-new' })
  })

  it('stops accepting a key disabled in the console once the TTL has passed', async () => {
    const store = storeOver()
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toBeDefined()
    const revoked = plane.keys.find((key) => key.id === 'k-pro') as ApiKey
    revoked.enabled = false
    now += KEY_SNAPSHOT_TTL_MS - 1
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toBeDefined()
    now += 1
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toBeUndefined()
    expect(plane.refreshes()).toBe(2)
  })

  it('stops accepting a key removed from its plan once the TTL has passed', async () => {
    const store = storeOver()
    await expect(store.lookup(value('k-free'), SCOPE)).resolves.toBeDefined()
    plane.planKeys['up-free'] = []
    now += KEY_SNAPSHOT_TTL_MS
    await expect(store.lookup(value('k-free'), SCOPE)).resolves.toBeUndefined()
  })

  it('coalesces concurrent lookups on a cold store into one refresh', async () => {
    const store = storeOver()
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.lookup(value(i % 2 === 0 ? 'k-pro' : 'unknown'), SCOPE),
      ),
    )
    expect(results.filter((record) => record?.id === 'k-pro')).toHaveLength(25)
    expect(plane.refreshes()).toBe(1)
    expect(
      plane.requests(GetUsagePlansCommand).filter((input) => input.position === undefined),
    ).toHaveLength(1)
  })
})

describe('ApiGatewayKeyStore: control-plane failures', () => {
  it('throws (not "Unauthorized") when API Gateway fails and nothing is cached', async () => {
    plane.failure = Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException' })
    const lookup = storeOver().lookup(value('k-pro'), SCOPE)
    await expect(lookup).rejects.toThrow()
    await expect(lookup).rejects.not.toThrow(/^Unauthorized$/)
  })

  it('does not retry a failed refresh before the interval, then recovers', async () => {
    const store = storeOver()
    plane.failure = new Error('Service unavailable')
    await expect(store.lookup(value('k-pro'), SCOPE)).rejects.toThrow()
    const calls = plane.calls()
    for (let i = 0; i < 100; i += 1) {
      await expect(store.lookup(value('k-pro'), SCOPE)).rejects.toThrow(/unavailable/)
    }
    expect(plane.calls()).toBe(calls)

    plane.failure = undefined
    now += MIN_REFRESH_INTERVAL_MS
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toMatchObject({ id: 'k-pro' })
  })

  it('serves the last snapshot while API Gateway fails, for up to 15 minutes', async () => {
    const store = storeOver()
    const loadedAt = now
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toBeDefined()
    plane.failure = new Error('Service unavailable')

    now += KEY_SNAPSHOT_TTL_MS
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toMatchObject({ id: 'k-pro' })
    await expect(store.lookup(value('never-issued'), SCOPE)).resolves.toBeUndefined()
    const refreshesWhileFailing = plane.refreshes()
    now += MIN_REFRESH_INTERVAL_MS - 1
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toMatchObject({ id: 'k-pro' })
    expect(plane.refreshes()).toBe(refreshesWhileFailing)

    now = loadedAt + MAX_STALE_MS - 1
    await expect(store.lookup(value('k-pro'), SCOPE)).resolves.toMatchObject({ id: 'k-pro' })
    now = loadedAt + MAX_STALE_MS
    await expect(store.lookup(value('k-pro'), SCOPE)).rejects.toThrow()
  })
})
