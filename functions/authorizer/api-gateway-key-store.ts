import { createHash } from 'node:crypto'
import {
  type APIGatewayClient,
  type APIGatewayPaginationConfiguration,
  type ApiKey,
  paginateGetApiKeys,
  paginateGetUsagePlanKeys,
  paginateGetUsagePlans,
  type UsagePlan,
} from '@aws-sdk/client-api-gateway'
import type { ApiKeyRecord, KeyScope, KeyStore } from '#shared/auth/key-store.ts'
import { optionalEnv } from '#shared/config/env-config.ts'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  isPlanName,
  limitsFor,
  type PlanLimits,
  type PlanName,
  parsePlanLimits,
  USAGE_PLAN_TAG,
} from '#shared/config/plans-config.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'

/**
 * The authorizer's KeyStore on AWS: API Gateway's own keys and usage plans are the source of
 * truth, so a key created in the console and attached to a plan works without a deploy.
 *
 * A key is valid iff it is enabled and attached to a usage plan whose apiStages include the
 * API id and stage of the request (from the methodArn). Its plan is the plan's `petstore:plan`
 * tag (a plan of the stage without the tag is a custom Enterprise plan); its limits are the
 * plan's own throttle burst (per minute) and DAY quota (per day) when set, else the plan table
 * (Enterprise: ENTERPRISE_LIMITS). Its id is the API Gateway key id.
 *
 * Only GetUsagePlans, GetUsagePlanKeys and GetApiKeys (includeValues) are called, all paginated.
 * What they return is kept as a snapshot per stage, keyed by the SHA-256 of each key value
 * (values themselves are never kept):
 * - TTL 60 s: a lookup after that refreshes first, so a revoked or detached key stops working
 *   within a minute (API Gateway also checks the key itself when it meters the request).
 * - An unknown key (e.g. created a moment ago) may refresh early, but only if the last refresh
 *   began at least 10 s ago, and concurrent refreshes share one in-flight call: a flood of random
 *   tokens costs at most one refresh (1 + plans + 1 calls) per 10 s per instance.
 * - Control-plane failure: a snapshot up to 15 minutes old keeps being served (logged as a
 *   warning; retried at most every 10 s); without one, lookup throws, so API Gateway answers 500
 *   rather than calling a possibly valid key invalid. Never throws "Unauthorized" itself.
 */
export const KEY_SNAPSHOT_TTL_MS = 60_000
export const MIN_REFRESH_INTERVAL_MS = 10_000
export const MAX_STALE_MS = 15 * 60_000

export interface ApiGatewayKeyStoreOptions {
  /** A real client: the SDK paginators check its class. */
  client: APIGatewayClient
  /** Limits of an Enterprise plan that has no throttle or DAY quota of its own. */
  enterpriseLimits?: PlanLimits
  clock?: Clock
  logger?: AppLogger
  ttlMs?: number
  minRefreshIntervalMs?: number
  maxStaleMs?: number
}

interface Snapshot {
  loadedAt: number
  /** SHA-256 (hex) of the key value → record, for valid keys only. */
  records: Map<string, ApiKeyRecord>
}

interface ScopeState {
  snapshot?: Snapshot
  refreshStartedAt?: number
  inFlight?: Promise<Snapshot>
  lastError?: unknown
}

interface StagePlan {
  name: PlanName
  limits: PlanLimits
}

/** ENTERPRISE_LIMITS ("perMinute/perDay"), else the default; a malformed value fails the cold start. */
export const enterpriseLimitsFromEnv = (env: NodeJS.ProcessEnv = process.env): PlanLimits => {
  const text = optionalEnv('ENTERPRISE_LIMITS', env)
  return text === undefined ? DEFAULT_ENTERPRISE_LIMITS : parsePlanLimits(text)
}

const hashOf = (key: string): string => createHash('sha256').update(key).digest('hex')

/** Every item of a listing, page after page. */
const allItems = async <Item>(pages: AsyncIterable<{ items?: Item[] }>): Promise<Item[]> => {
  const items: Item[] = []
  for await (const page of pages) items.push(...(page.items ?? []))
  return items
}

const positiveInteger = (value: number | undefined): number | undefined =>
  value !== undefined && Number.isInteger(value) && value > 0 ? value : undefined

export class ApiGatewayKeyStore implements KeyStore {
  readonly #pagination: APIGatewayPaginationConfiguration
  readonly #enterpriseLimits: PlanLimits
  readonly #clock: Clock
  readonly #logger: AppLogger | undefined
  readonly #ttlMs: number
  readonly #minRefreshIntervalMs: number
  readonly #maxStaleMs: number
  readonly #scopes = new Map<string, ScopeState>()

  constructor(options: ApiGatewayKeyStoreOptions) {
    // API Gateway's largest page; a page that repeats its position ends the listing, not a loop.
    this.#pagination = { client: options.client, pageSize: 500, stopOnSameToken: true }
    this.#enterpriseLimits = options.enterpriseLimits ?? DEFAULT_ENTERPRISE_LIMITS
    this.#clock = options.clock ?? systemClock
    this.#logger = options.logger
    this.#ttlMs = options.ttlMs ?? KEY_SNAPSHOT_TTL_MS
    this.#minRefreshIntervalMs = options.minRefreshIntervalMs ?? MIN_REFRESH_INTERVAL_MS
    this.#maxStaleMs = options.maxStaleMs ?? MAX_STALE_MS
  }

  async lookup(key: string, scope?: KeyScope): Promise<ApiKeyRecord | undefined> {
    if (!scope) throw new Error('ApiGatewayKeyStore needs the API id and stage of the request')
    const hash = hashOf(key)
    const state = this.#stateOf(scope)
    const snapshot = await this.#usableSnapshot(state, scope)
    const record = snapshot.records.get(hash)
    if (record) return record
    // Unknown here, but perhaps created since: look again, within the refresh budget.
    if (!state.inFlight && !this.#mayRefresh(state)) return undefined
    try {
      return (await this.#refresh(state, scope)).records.get(hash)
    } catch {
      // Already logged; the snapshot just used still answers.
      return undefined
    }
  }

  #stateOf({ apiId, stage }: KeyScope): ScopeState {
    const id = `${apiId}/${stage}`
    let state = this.#scopes.get(id)
    if (!state) {
      state = {}
      this.#scopes.set(id, state)
    }
    return state
  }

  #mayRefresh(state: ScopeState): boolean {
    return (
      state.refreshStartedAt === undefined ||
      this.#clock() - state.refreshStartedAt >= this.#minRefreshIntervalMs
    )
  }

  /** A snapshot within its TTL, refreshed if needed; a stale one while the control plane fails. */
  async #usableSnapshot(state: ScopeState, scope: KeyScope): Promise<Snapshot> {
    const current = state.snapshot
    if (current && this.#clock() - current.loadedAt < this.#ttlMs) return current
    if (state.inFlight || this.#mayRefresh(state)) {
      try {
        return await this.#refresh(state, scope)
      } catch (error) {
        if (current && this.#isServableStale(current)) return current
        throw error
      }
    }
    // The last refresh failed moments ago: do not call again yet.
    if (current && this.#isServableStale(current)) return current
    throw new Error('API Gateway key snapshot unavailable', { cause: state.lastError })
  }

  #isServableStale(snapshot: Snapshot): boolean {
    return this.#clock() - snapshot.loadedAt < this.#maxStaleMs
  }

  #refresh(state: ScopeState, scope: KeyScope): Promise<Snapshot> {
    if (!state.inFlight) {
      const startedAt = this.#clock()
      state.refreshStartedAt = startedAt
      state.inFlight = this.#load(scope, startedAt)
        .then(
          (snapshot) => {
            state.snapshot = snapshot
            state.lastError = undefined
            this.#logger?.debug('Refreshed API key snapshot', {
              apiId: scope.apiId,
              stage: scope.stage,
              validKeys: snapshot.records.size,
            })
            return snapshot
          },
          (error: unknown) => {
            state.lastError = error
            this.#logger?.warn('API key refresh failed', {
              apiId: scope.apiId,
              stage: scope.stage,
              error,
              servingSnapshotFrom: state.snapshot
                ? new Date(state.snapshot.loadedAt).toISOString()
                : undefined,
            })
            throw error
          },
        )
        .finally(() => {
          state.inFlight = undefined
        })
    }
    return state.inFlight
  }

  async #load(scope: KeyScope, loadedAt: number): Promise<Snapshot> {
    const [keys, planOfKeyId] = await Promise.all([this.#apiKeys(), this.#stageKeyPlans(scope)])
    const records = new Map<string, ApiKeyRecord>()
    for (const key of keys) {
      if (key.enabled !== true || !key.id || !key.value) continue
      const plan = planOfKeyId.get(key.id)
      if (!plan) continue
      records.set(hashOf(key.value), { id: key.id, plan: plan.name, limits: plan.limits })
    }
    return { loadedAt, records }
  }

  #apiKeys(): Promise<ApiKey[]> {
    return allItems(paginateGetApiKeys(this.#pagination, { includeValues: true }))
  }

  /** Key id → plan, for keys attached to a usage plan of this API stage. */
  async #stageKeyPlans({ apiId, stage }: KeyScope): Promise<Map<string, StagePlan>> {
    const plans = (await allItems(paginateGetUsagePlans(this.#pagination, {})))
      .filter(
        (plan) =>
          plan.id !== undefined &&
          (plan.apiStages ?? []).some((entry) => entry.apiId === apiId && entry.stage === stage),
      )
      // API Gateway allows one plan per key and stage; sorting keeps any surprise deterministic.
      .sort((a, b) => String(a.id).localeCompare(String(b.id)))
    const keyIdsPerPlan = await Promise.all(
      plans.map((plan) =>
        allItems(paginateGetUsagePlanKeys(this.#pagination, { usagePlanId: plan.id as string })),
      ),
    )
    const result = new Map<string, StagePlan>()
    plans.forEach((plan, index) => {
      const stagePlan = this.#stagePlanOf(plan)
      for (const planKey of keyIdsPerPlan[index] ?? []) {
        if (planKey.id && !result.has(planKey.id)) result.set(planKey.id, stagePlan)
      }
    })
    return result
  }

  #stagePlanOf(plan: UsagePlan): StagePlan {
    const tag = plan.tags?.[USAGE_PLAN_TAG]?.trim().toLowerCase()
    if (tag !== undefined && !isPlanName(tag)) {
      this.#logger?.warn('Usage plan tag is not a plan name; treating the plan as Enterprise', {
        usagePlanId: plan.id,
        tag: USAGE_PLAN_TAG,
      })
    }
    const name: PlanName = tag !== undefined && isPlanName(tag) ? tag : 'enterprise'
    const defaults = limitsFor(name, this.#enterpriseLimits)
    const dailyQuota = plan.quota?.period === 'DAY' ? plan.quota.limit : undefined
    return {
      name,
      limits: {
        perMinute: positiveInteger(plan.throttle?.burstLimit) ?? defaults.perMinute,
        perDay: positiveInteger(dailyQuota) ?? defaults.perDay,
      },
    }
  }
}
