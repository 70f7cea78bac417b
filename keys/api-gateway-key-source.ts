import {
  type APIGatewayClient,
  type ApiKey,
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  type UsagePlan,
  type UsagePlanKey,
} from '@aws-sdk/client-api-gateway'
import { PAGE_SIZE, readWholeListing } from '#keys/management-listing.ts'
import { isPoolPlan } from '#keys/usage-plans-config.ts'
import { planFromTags } from '#shared/config/plans-config.ts'
import type { KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { type CallPacer, unpaced } from './call-pacer.ts'
import {
  type ListedKey,
  listedKeys,
  mirrorEntries,
  type PlanGrant,
  type PlanVerdict,
  planVerdicts,
  readingOrder,
} from './key-verdicts.ts'

// The management API reader of the key sync: plans and keys, as mirror entries.

/**
 * Keys a plan lists but the key listing lacks are looked up one by one (GetApiKey): a key
 * created after the listing is used as found; one deleted in between, or kept in a plan's
 * listing after its deletion (moto does; AWS's documentation does not say), is gone and not
 * mirrored, whatever their number. More than this many that GetApiKey still finds is no race
 * but a listing that contradicts itself.
 */
const MAX_UNLISTED_FOUND = 25

/** A listing that hands back a position it already gave: reading on would loop or truncate. */
export class RepeatedPageTokenError extends Error {
  constructor(listing: string, page: number) {
    super(`API Gateway's ${listing} listing repeated its position token at page ${page}`)
    this.name = 'RepeatedPageTokenError'
  }
}

export interface RefusedPlan {
  usagePlanId: string
  reason: string
}

/** What a run may read: until when, which plans first, where the last run stopped. */
export interface ReadOptions {
  /** No plan's keys are read after this instant (the run's budget; ms since the epoch). */
  deadlineMs?: number
  /** Ids named by management events: their plans (or the plans of the keys) are read first. */
  priorityIds?: readonly string[]
  /** The last plan id a previous run read in the rotation: this run goes on after it. */
  cursor?: string
  /** Read only the plans the priority ids name (a second look after events), no rotation. */
  onlyNamed?: boolean
  /** Plans the rotation passes over this run (a backoff after failed reads); named ones are tried. */
  skipPlans?: ReadonlySet<string>
  /** Key ids are looked up (GetUsagePlans by key) only until this instant: the rest of the run
   * belongs to the rotation and to fresh events. */
  lookupDeadlineMs?: number
  /** Asked about once a second while plans are read: true ends the reading (a fresh event). */
  interrupted?: () => Promise<boolean>
}

/**
 * One read of API Gateway: every stage plan and key, and the keys of as many stage plans as the
 * run's budget allowed (all of them at a few hundred plans; a rotation across runs beyond).
 */
export interface KeySourceSnapshot {
  /** Mirror entries of the plans read: one per enabled key with a value. */
  entries: KeyMirrorEntry[]
  /** Stage plans whose keys this run read, valid or refused. */
  plansRead: string[]
  /** Stage plans with valid tags (read or not), with their grant: a mirrored key of any other
   * plan has lost its plan. */
  validPlans: ReadonlyMap<string, PlanGrant>
  /** Whether every stage plan was read: the mirror can be compared as a whole. */
  complete: boolean
  /**
   * Where the rotation stopped (the last plan read in id order), for the next run; undefined
   * when it reached the last plan: the rotation is done and the next one starts from the first.
   * A read of only what events named hands back the cursor it was given.
   */
  cursor: string | undefined
  /** Whether this read took the rotation to the last plan. */
  rotationDone: boolean
  /**
   * The priority ids this read dealt with: their plans (or, for a key, all its plans) were read,
   * or there was nothing to read. The others wait for the next run.
   */
  namedRead: string[]
  /**
   * Named key ids left to the rotation: more of them than plans to read, so reading every plan
   * costs fewer calls than looking each up; a rotation that begins after they were named settles
   * them.
   */
  toRotation: string[]
  /** Stage plans whose keys could not be read this run: their keys stay as they are. */
  failedPlans: RefusedPlan[]
  /** Priority ids whose plan (or one of whose key's plans) could not be read. */
  namedFailed: string[]
  /** Usage plans attached to this API stage (valid or not). */
  stagePlans: number
  /** Stage plans whose tags are missing or invalid: their keys are refused. */
  refusedPlans: RefusedPlan[]
  /** Ids (never values) of keys attached to refused plans that were read. */
  refusedKeyIds: string[]
  /** Keys attached to a valid plan read but disabled (or past their disable-after tag): left out. */
  disabledKeys: number
  /** Keys the plans read list that GetApiKey no longer finds: deleted, whatever their number. */
  deletedKeyIds: string[]
  /** Every key in the Region's listing, by id (values hashed), for lookups of moved keys. */
  keys: ReadonlyMap<string, ListedKey>
  /** Management API operations made (pages read; SDK retries not counted). */
  managementCalls: number
  /** Ids of the stage's plans and of the keys of the plans read, sorted (for scoping events). */
  stageIds: string[]
}
/**
 * A read that contradicts itself: a usage plan of the stage lists keys that the key listing
 * lacks and that GetApiKey still finds, more than a race explains. Such a read must not decide
 * which keys stop working; the run writes nothing and fails, and the next one reads again. Key
 * ids are not secrets: the message names a few.
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
  read(options?: ReadOptions): Promise<KeySourceSnapshot>
  /** The stage plans a key is on now (GetUsagePlans with keyId), valid ones only. */
  validPlansOfKey?(keyId: string): Promise<string[]>
  /** Whether API Gateway still has a key (GetApiKey): false once it is deleted. */
  keyExists?(keyId: string): Promise<boolean>
}

export interface ApiGatewayKeySourceOptions {
  client: APIGatewayClient
  restApiId: string
  stage: string
  pageSize?: number
  pacer?: CallPacer
  /** Decides whether a disable-after tag has passed, and when the budget is spent. */
  clock?: Clock
}

type Page<Item> = { items?: Item[]; position?: string }

/**
 * Reads the usage plans attached to one REST API stage, their keys and the key values, and
 * turns them into mirror entries: one per enabled key (not past its disable-after tag) on a plan
 * with valid `petstore:*` tags. A run reads the plan listing and the key listing whole (a few
 * dozen pages at AWS's ceilings), then one plan's keys per call until its deadline: plans named
 * by events first, then a rotation that the next run continues. Calls are sequential and paced.
 * Key values are hashed at once and never returned or logged.
 */
export class ApiGatewayKeySource implements KeySource {
  readonly #client: APIGatewayClient
  readonly #restApiId: string
  readonly #stage: string
  readonly #pageSize: number
  readonly #pacer: CallPacer
  readonly #clock: Clock
  #calls = 0

  constructor({ client, restApiId, stage, pageSize, pacer, clock }: ApiGatewayKeySourceOptions) {
    this.#client = client
    this.#restApiId = restApiId
    this.#stage = stage
    this.#pageSize = pageSize ?? PAGE_SIZE
    this.#pacer = pacer ?? unpaced
    this.#clock = clock ?? systemClock
  }

  async read({
    deadlineMs,
    priorityIds = [],
    cursor,
    onlyNamed = false,
    skipPlans,
    lookupDeadlineMs,
    interrupted,
  }: ReadOptions = {}): Promise<KeySourceSnapshot> {
    const callsBefore = this.#calls
    const limit = this.#pageSize
    const stagePlans = (
      await this.#collect<UsagePlan>('usage plan', (position) =>
        this.#client.send(new GetUsagePlansCommand({ position, limit })),
      )
    )
      .filter((plan): plan is UsagePlan & { id: string } => plan.id !== undefined)
      .filter((plan) => this.#isAttached(plan))
      // API Gateway allows one plan per key and stage; sorting keeps any surprise deterministic.
      .sort((a, b) => a.id.localeCompare(b.id))
    const apiKeys = await this.#collect<ApiKey>('API key', (position) =>
      this.#client.send(new GetApiKeysCommand({ position, limit, includeValues: true })),
    )
    const keysById = new Map<string, ApiKey>()
    for (const key of apiKeys) if (key.id) keysById.set(key.id, key)

    const { verdicts, refusedPlans } = planVerdicts(stagePlans)

    // Plans named by id first; a key's id stands for the plans it is on (looked up when needed),
    // unless reading every plan costs fewer calls than the lookups.
    const named = new Set(priorityIds.filter((id) => verdicts.has(id)))
    const namedKeys = priorityIds.filter((id) => !verdicts.has(id) && keysById.has(id))
    // Reading every plan settles every named key at once when there are more keys than plans.
    const toRotation = namedKeys.length > verdicts.size ? namedKeys : []
    const onlyNamedNow = onlyNamed && toRotation.length === 0
    const plansOfNamedKey = new Map<string, string[]>()
    const lookupsEnd = Math.min(lookupDeadlineMs ?? Infinity, deadlineMs ?? Infinity)
    for (const id of toRotation.length > 0 ? [] : namedKeys) {
      if (this.#pastDeadline(lookupsEnd)) break
      const planIds = await this.#stagePlansOfKey(id)
      plansOfNamedKey.set(id, planIds)
      for (const planId of planIds) named.add(planId)
    }
    const order = onlyNamedNow
      ? [...named].sort()
      : readingOrder([...verdicts.keys()], named, cursor)
    const { verdictOfKey, plansRead, failedPlans, rotationCursor, visited } = await this.#readPlans(
      order,
      { named, verdicts, cursor, deadlineMs, skipPlans, interrupted },
    )

    const { unresolved, deleted: deletedKeyIds } = await this.#resolveMissing(
      verdictOfKey,
      keysById,
      deadlineMs,
    )
    // A plan whose unlisted keys the run had no time to look up counts as unread.
    for (const planId of unresolved) {
      plansRead.splice(plansRead.indexOf(planId), 1)
      failedPlans.push({ usagePlanId: planId, reason: 'UnlistedKeysNotLookedUp' })
      for (const [keyId, verdict] of verdictOfKey) {
        if (verdict.usagePlanId === planId) verdictOfKey.delete(keyId)
      }
    }

    const listed = listedKeys(keysById, this.#clock())
    const { entries, refusedKeyIds, disabledKeys } = mirrorEntries(verdictOfKey, listed)

    const read = new Set(plansRead)
    // A named id is read when its plan is, or every plan of its key; an id that is neither a
    // stage plan nor a listed key (a deleted key, another stage's plan) has nothing to read.
    const failed = new Set(failedPlans.map(({ usagePlanId }) => usagePlanId))
    const rotationDone = !onlyNamedNow && visited === order.length
    const complete = rotationDone && plansRead.length === verdicts.size
    const namedRead = priorityIds.filter((id) =>
      complete
        ? true
        : verdicts.has(id)
          ? read.has(id)
          : keysById.has(id)
            ? (plansOfNamedKey.get(id)?.every((planId) => read.has(planId)) ?? false)
            : true,
    )
    return {
      entries,
      plansRead,
      validPlans: new Map(
        [...verdicts.values()].flatMap((verdict) =>
          'refused' in verdict
            ? []
            : [[verdict.usagePlanId, { plan: verdict.plan, limits: verdict.limits }] as const],
        ),
      ),
      complete,
      cursor: onlyNamedNow ? cursor : rotationDone ? undefined : rotationCursor,
      rotationDone,
      namedRead,
      toRotation: complete ? [] : toRotation,
      failedPlans,
      namedFailed: priorityIds.filter((id) =>
        verdicts.has(id)
          ? failed.has(id)
          : (plansOfNamedKey.get(id)?.some((planId) => failed.has(planId)) ?? false),
      ),
      stagePlans: stagePlans.length,
      refusedPlans,
      refusedKeyIds,
      disabledKeys,
      deletedKeyIds,
      keys: listed,
      managementCalls: this.#calls - callsBefore,
      stageIds: [...verdicts.keys(), ...verdictOfKey.keys()].sort(),
    }
  }

  /**
   * The keys of each plan in `order`, until the deadline or an interruption: named plans first,
   * the rotation's cursor moved past each plan of the rotation read (or skipped while it backs off).
   */
  async #readPlans(
    order: readonly string[],
    {
      named,
      verdicts,
      cursor,
      deadlineMs,
      skipPlans,
      interrupted,
    }: Pick<ReadOptions, 'cursor' | 'deadlineMs' | 'skipPlans' | 'interrupted'> & {
      named: ReadonlySet<string>
      verdicts: ReadonlyMap<string, PlanVerdict>
    },
  ) {
    const limit = this.#pageSize
    const verdictOfKey = new Map<string, PlanVerdict>()
    const plansRead: string[] = []
    const failedPlans: RefusedPlan[] = []
    let rotationCursor = cursor
    let visited = 0
    let checkedAt = this.#clock()
    for (const planId of order) {
      // The first plan is always read, so a run always makes progress.
      if (visited > 0 && this.#pastDeadline(deadlineMs)) break
      if (interrupted && this.#clock() - checkedAt >= 1_000) {
        checkedAt = this.#clock()
        if (await interrupted()) break
      }
      visited += 1
      if (!named.has(planId)) rotationCursor = planId
      if (!named.has(planId) && skipPlans?.has(planId)) continue
      const verdict = verdicts.get(planId) as PlanVerdict
      let planKeys: UsagePlanKey[]
      try {
        planKeys = await this.#collect<UsagePlanKey>('usage plan key', (position) =>
          this.#client.send(new GetUsagePlanKeysCommand({ usagePlanId: planId, position, limit })),
        )
      } catch (error) {
        // One plan's fault stays with it: its keys stay as they are, the others are read.
        failedPlans.push({ usagePlanId: planId, reason: (error as Error).name ?? 'Error' })
        continue
      }
      plansRead.push(planId)
      for (const { id, type } of planKeys) {
        if (!id || (type !== undefined && type !== 'API_KEY') || verdictOfKey.has(id)) continue
        verdictOfKey.set(id, verdict)
      }
    }
    return { verdictOfKey, plansRead, failedPlans, rotationCursor, visited }
  }

  /** The valid stage plans a key is on now: one call (GetUsagePlans filtered by keyId). */
  async validPlansOfKey(keyId: string): Promise<string[]> {
    return (await this.#stagePlansOfKey(keyId, true)).sort()
  }

  async #stagePlansOfKey(keyId: string, validOnly = false): Promise<string[]> {
    const limit = this.#pageSize
    const plans = await this.#collect<UsagePlan>('usage plan', (position) =>
      this.#client.send(new GetUsagePlansCommand({ keyId, position, limit })),
    )
    return plans
      .filter((plan) => plan.id !== undefined && this.#isAttached(plan))
      .filter((plan) => !validOnly || !('error' in planFromTags(plan.tags)))
      .map((plan) => plan.id as string)
  }

  /**
   * Keys the plans list but the key listing lacks: created after it (found by GetApiKey and
   * used) or deleted (NotFound: left out), whatever their number. More found than a race
   * explains is a broken read. Returns the plans whose keys were not all looked up by the
   * deadline, and the keys found deleted.
   */
  async #resolveMissing(
    verdictOfKey: Map<string, PlanVerdict>,
    keysById: Map<string, ApiKey>,
    deadlineMs: number | undefined,
  ): Promise<{ unresolved: Set<string>; deleted: string[] }> {
    const missing = [...verdictOfKey.keys()].filter((id) => !keysById.has(id)).sort()
    const found: string[] = []
    const deleted: string[] = []
    const unresolved = new Set<string>()
    for (const id of missing) {
      // A run's reserve is for writing; lookups past its deadline wait for the next run.
      if (this.#pastDeadline(deadlineMs === undefined ? undefined : deadlineMs + 5_000)) {
        unresolved.add(verdictOfKey.get(id)?.usagePlanId as string)
        continue
      }
      const key = await this.#fetchKey(id)
      if (key) {
        keysById.set(id, key)
        found.push(id)
      } else {
        verdictOfKey.delete(id)
        deleted.push(id)
      }
    }
    if (found.length > MAX_UNLISTED_FOUND) throw new InconsistentKeyReadError(found)
    return { unresolved, deleted }
  }

  async keyExists(keyId: string): Promise<boolean> {
    return (await this.#fetchKey(keyId, false)) !== undefined
  }

  /** The key with its value, or undefined when API Gateway no longer has it. */
  async #fetchKey(apiKey: string, includeValue = true): Promise<ApiKey | undefined> {
    await this.#pacer.take()
    this.#calls += 1
    try {
      return await this.#client.send(new GetApiKeyCommand({ apiKey, includeValue }))
    } catch (error) {
      if ((error as { name?: string }).name === 'NotFoundException') return undefined
      throw error
    }
  }

  #pastDeadline(deadlineMs: number | undefined): boolean {
    return deadlineMs !== undefined && this.#clock() >= deadlineMs
  }

  /**
   * A customer plan of this stage: attached to it, and not the pool plan store keys are metered
   * under (its one key is a secret the authorizer holds, never mirrored, never a bearer key; it
   * has no plan tags and is no refused plan either).
   */
  #isAttached(plan: UsagePlan): boolean {
    return (
      !isPoolPlan(plan.tags) &&
      (plan.apiStages ?? []).some(
        (entry) => entry.apiId === this.#restApiId && entry.stage === this.#stage,
      )
    )
  }

  /** Every item of a listing; each page is one paced management call. */
  #collect<Item>(
    listing: string,
    page: (position: string | undefined) => Promise<Page<Item>>,
  ): Promise<Item[]> {
    return readWholeListing(
      async (position) => {
        await this.#pacer.take()
        this.#calls += 1
        return page(position)
      },
      (failure) =>
        failure.kind === 'repeated-position'
          ? new RepeatedPageTokenError(listing, failure.page)
          : new Error(`API Gateway's ${listing} listing did not end after ${failure.pages} pages`),
    )
  }
}
