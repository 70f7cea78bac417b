import {
  type APIGatewayClient,
  type ApiKey,
  GetApiKeyCommand,
  paginateGetApiKeys,
  paginateGetUsagePlanKeys,
  paginateGetUsagePlans,
  type UsagePlan,
  type UsagePlanKey,
} from '@aws-sdk/client-api-gateway'
import { type PlanLimits, type PlanName, planFromTags } from '#shared/config/plans-config.ts'
import { hashApiKey, type KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { type CallPacer, unpaced } from './call-pacer.ts'

/**
 * An API key's tag: the instant (ISO 8601) from which the key counts as disabled, so a rotated
 * key's overlap ends by itself, within a sync, with no one left to call UpdateApiKey. A value
 * that is not an instant counts as past: a typo never keeps a key alive longer than meant.
 */
export const DISABLE_AFTER_TAG = 'petstore:disableAfter'

/** Whether a key's disable-after tag, if any, has passed. */
export const isPastDisableAfter = (
  tags: Record<string, string | undefined> | undefined,
  nowMs: number,
): boolean => {
  const value = tags?.[DISABLE_AFTER_TAG]
  if (value === undefined) return false
  const at = Date.parse(value)
  return !Number.isFinite(at) || at <= nowMs
}

/** API Gateway's largest page; a runaway position chain stops at MAX_PAGES. */
export const PAGE_SIZE = 500
const MAX_PAGES = 200

/**
 * Keys a plan lists but the key listing lacks that a run looks up one by one (GetApiKey): a key
 * deleted between the two listings, or kept in a plan's listing after its deletion (moto does;
 * AWS's documentation does not say), is gone and simply not mirrored. More than this many is no
 * deletion race but a broken read.
 */
const MAX_MISSING_LOOKUPS = 25

export interface RefusedPlan {
  usagePlanId: string
  reason: string
}

/** One read of API Gateway: what the mirror should hold, and what was refused and why. */
export interface KeySourceSnapshot {
  entries: KeyMirrorEntry[]
  /** Usage plans attached to this API stage (valid or not). */
  stagePlans: number
  /** Stage plans whose tags are missing or invalid: their keys are refused. */
  refusedPlans: RefusedPlan[]
  /** Ids (never values) of keys attached to refused plans. */
  refusedKeyIds: string[]
  /** Keys attached to a valid plan but disabled (or past their disable-after tag): left out. */
  disabledKeys: number
  /** Management API operations made (pages read; SDK retries not counted). */
  managementCalls: number
  /** Ids of the stage's plans and of every key attached to them, sorted (for scoping events). */
  stageIds: string[]
}

/**
 * A read that contradicts itself: a usage plan of the stage lists a key that the key listing,
 * read moments later, does not have (a key deleted in between, or an incomplete answer). Such a
 * read must not decide which keys stop working; the run writes nothing and fails, and the next
 * one reads again. Key ids are not secrets: the message names a few.
 */
export class InconsistentKeyReadError extends Error {
  readonly missingKeyIds: string[]

  constructor(missingKeyIds: string[]) {
    super(
      `Inconsistent read of API Gateway: ${missingKeyIds.length} key(s) attached to a usage plan of the stage are missing from the key listing (${missingKeyIds.slice(0, 10).join(', ')})`,
    )
    this.name = 'InconsistentKeyReadError'
    this.missingKeyIds = missingKeyIds
  }
}

export interface KeySource {
  read(): Promise<KeySourceSnapshot>
}

export interface ApiGatewayKeySourceOptions {
  /** The paginators insist on a real APIGatewayClient instance (aws-sdk-client-mock keeps it one). */
  client: APIGatewayClient
  restApiId: string
  stage: string
  pageSize?: number
  pacer?: CallPacer
  /** Decides whether a disable-after tag has passed. */
  clock?: Clock
}

type PlanVerdict =
  | { usagePlanId: string; plan: PlanName; limits: PlanLimits }
  | { usagePlanId: string; refused: true }

/**
 * Reads the usage plans attached to one REST API stage, their keys and the key values, and
 * turns them into mirror entries: one per enabled key (not past its disable-after tag) on a plan
 * with valid `petstore:*` tags. A
 * key a plan lists but the key listing lacks fails the read (InconsistentKeyReadError).
 * Calls are sequential (and paced): 1 per page of plans, 1 per page of keys of each stage plan,
 * 1 per page of API keys. Key values are hashed at once and never returned or logged.
 */
export class ApiGatewayKeySource implements KeySource {
  readonly #client: APIGatewayClient
  readonly #restApiId: string
  readonly #stage: string
  readonly #pageSize: number
  readonly #pacer: CallPacer
  readonly #clock: Clock

  constructor({ client, restApiId, stage, pageSize, pacer, clock }: ApiGatewayKeySourceOptions) {
    this.#client = client
    this.#restApiId = restApiId
    this.#stage = stage
    this.#pageSize = pageSize ?? PAGE_SIZE
    this.#pacer = pacer ?? unpaced
    this.#clock = clock ?? systemClock
  }

  async read(): Promise<KeySourceSnapshot> {
    const calls = { count: 0 }
    const config = { client: this.#client, pageSize: this.#pageSize, stopOnSameToken: true }

    const stagePlans = (await this.#collect<UsagePlan>(paginateGetUsagePlans(config, {}), calls))
      .filter((plan): plan is UsagePlan & { id: string } => plan.id !== undefined)
      .filter((plan) => this.#isAttached(plan))
      // API Gateway allows one plan per key and stage; sorting keeps any surprise deterministic.
      .sort((a, b) => a.id.localeCompare(b.id))

    const refusedPlans: RefusedPlan[] = []
    const refusedKeyIds = new Set<string>()
    const verdictOfKey = new Map<string, PlanVerdict>()
    for (const plan of stagePlans) {
      const tagged = planFromTags(plan.tags)
      const verdict: PlanVerdict =
        'error' in tagged
          ? { usagePlanId: plan.id, refused: true }
          : { usagePlanId: plan.id, ...tagged }
      if ('error' in tagged) refusedPlans.push({ usagePlanId: plan.id, reason: tagged.error })
      // Keys of refused plans are read too, so the report names them (ids only).
      const planKeys = await this.#collect<UsagePlanKey>(
        paginateGetUsagePlanKeys(config, { usagePlanId: plan.id }),
        calls,
      )
      for (const { id, type } of planKeys) {
        if (!id || (type !== undefined && type !== 'API_KEY') || verdictOfKey.has(id)) continue
        verdictOfKey.set(id, verdict)
        if ('refused' in verdict) refusedKeyIds.add(id)
      }
    }

    const apiKeys = await this.#collect<ApiKey>(
      paginateGetApiKeys(config, { includeValues: true }),
      calls,
    )
    const listedIds = new Set(apiKeys.map((key) => key.id))
    const missing = [...verdictOfKey.keys()].filter((id) => !listedIds.has(id)).sort()
    if (missing.length > MAX_MISSING_LOOKUPS) throw new InconsistentKeyReadError(missing)
    const stillThere: string[] = []
    for (const id of missing) {
      if (await this.#exists(id, calls)) stillThere.push(id)
      else verdictOfKey.delete(id)
    }
    if (stillThere.length > 0) throw new InconsistentKeyReadError(stillThere)

    const entries: KeyMirrorEntry[] = []
    const seenHashes = new Set<string>()
    let disabledKeys = 0
    const nowMs = this.#clock()
    for (const key of apiKeys) {
      const verdict = key.id === undefined ? undefined : verdictOfKey.get(key.id)
      if (!key.id || !verdict || 'refused' in verdict) continue
      if (key.enabled !== true || isPastDisableAfter(key.tags, nowMs)) {
        disabledKeys += 1
        continue
      }
      if (!key.value) continue
      const keyHash = hashApiKey(key.value)
      // Values are unique in API Gateway; if not, the first key id (API order) keeps the hash.
      if (seenHashes.has(keyHash)) continue
      seenHashes.add(keyHash)
      entries.push({
        keyHash,
        keyId: key.id,
        enabled: true,
        plan: verdict.plan,
        perMinute: verdict.limits.perMinute,
        perDay: verdict.limits.perDay,
        usagePlanId: verdict.usagePlanId,
      })
    }

    return {
      entries,
      stagePlans: stagePlans.length,
      refusedPlans,
      refusedKeyIds: [...refusedKeyIds].sort(),
      disabledKeys,
      managementCalls: calls.count,
      stageIds: [...stagePlans.map((plan) => plan.id), ...verdictOfKey.keys()].sort(),
    }
  }

  /** Whether API Gateway still has the key: NotFound means deleted, anything else is an error. */
  async #exists(apiKey: string, calls: { count: number }): Promise<boolean> {
    await this.#pacer.take()
    calls.count += 1
    try {
      await this.#client.send(new GetApiKeyCommand({ apiKey }))
      return true
    } catch (error) {
      if ((error as { name?: string }).name === 'NotFoundException') return false
      throw error
    }
  }

  #isAttached(plan: UsagePlan): boolean {
    return (plan.apiStages ?? []).some(
      (entry) => entry.apiId === this.#restApiId && entry.stage === this.#stage,
    )
  }

  /** Every item of a listing; each page is one paced management call. */
  async #collect<Item>(
    pages: AsyncGenerator<{ items?: Item[]; position?: string }, unknown>,
    calls: { count: number },
  ): Promise<Item[]> {
    const items: Item[] = []
    const iterator = pages[Symbol.asyncIterator]()
    try {
      for (let page = 0; page < MAX_PAGES; page += 1) {
        await this.#pacer.take()
        calls.count += 1
        const result = await iterator.next()
        if (result.done) {
          // The paginator stopped by itself (same position twice): no call was made.
          calls.count -= 1
          return items
        }
        items.push(...(result.value.items ?? []))
        // Stop here rather than asking the paginator again: that would cost a pacer slot.
        if (!result.value.position) return items
      }
    } finally {
      await iterator.return(undefined)
    }
    throw new Error(`API Gateway listing did not end after ${MAX_PAGES} pages`)
  }
}
