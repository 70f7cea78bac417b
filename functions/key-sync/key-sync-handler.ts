import { randomUUID } from 'node:crypto'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import middy, { type MiddlewareObj } from '@middy/core'
import type { CloudFormationCustomResourceEvent, Context, EventBridgeEvent } from 'aws-lambda'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorRepository, StaleItem } from '#shared/data/key-mirror-repository.ts'
import type {
  KeySyncState,
  KeySyncStateRepository,
} from '#shared/data/key-sync-state-repository.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import type { Clock } from '#shared/time/clock.ts'
import {
  type KeySource,
  type KeySourceSnapshot,
  mirrorEntry,
  type ReadOptions,
} from './api-gateway-key-source.ts'
import type { AuthorizerCacheFlusher } from './authorizer-cache-flusher.ts'
import {
  type CustomResourceAnswer,
  customResourceResponse,
  isCustomResourceEvent,
  type ResponseSender,
} from './cloudformation-response.ts'
import { decideRemovals, type GroupDecision, WHOLE_MIRROR } from './removal-guard.ts'

/**
 * What invokes the sync: the EventBridge schedule ("Scheduled Event"), an API Gateway management
 * call ("AWS API Call via CloudTrail", source aws.apigateway), the keys CLI after a change (its
 * detail names the plan and key ids it changed, `{"ids": [...]}`), the deploy (a CloudFormation
 * custom resource event), or an operator confirming a held removal
 * (`{"confirmRemovals": [<key id>...]}`).
 * Only the trigger's name is logged (CloudTrail details may carry key data).
 */
export type KeySyncEvent =
  | EventBridgeEvent<string, unknown>
  | CloudFormationCustomResourceEvent
  | ConfirmRemovalsEvent

/**
 * An operator's confirmation of removals the guard holds: the ids of the keys, as the log line of
 * the held removal lists them (`confirm`). A held group goes only when every one of its keys is
 * named; a key the run would not remove anyway is never removed by being named.
 *
 * @example
 * aws lambda invoke --function-name <KeySyncFunctionName> \
 *   --cli-binary-format raw-in-base64-out --payload '{"confirmRemovals":["a1b2c3d4e5"]}' /dev/stdout
 */
export interface ConfirmRemovalsEvent {
  confirmRemovals: string[]
}

export const SCHEDULED_EVENT = 'Scheduled Event'
const MANAGEMENT_EVENT = 'AWS API Call via CloudTrail'

/**
 * The lease outlives the function's timeout by 30 s (90 s), so a run that dies holds it no longer
 * than this, and never shorter than a live run. Runs end well before the timeout (RUN_BUDGET), so
 * a live run always gives it up itself.
 */
export const LEASE_MS = (FUNCTION_TIMEOUT_SECONDS.keySync + 30) * 1_000

/**
 * A run's time, against the function's timeout: it reads plans for at most `rotationMs`, reads
 * plans named by events that came in meanwhile until `reserveMs` before its end, and keeps that
 * reserve for writing the mirror, flushing the cache and saving its state. Nothing starts after
 * that, so no run is ended by its timeout and every run gives its lease up itself.
 */
export const RUN_BUDGET = { rotationMs: 30_000, reserveMs: 15_000, minPassMs: 3_000 } as const

/** Keys of unread plans looked up one by one in a run (a key moved to a plan not read yet). */
const MAX_MOVED_LOOKUPS = 25

/**
 * A plan whose keys cannot be read: retried by the rotation after 1, 2, 4… minutes, at most
 * every 15; a pending id whose plan failed this many runs stops holding the next runs up (the
 * rotation keeps retrying the plan, and the unread-plans alarm names it).
 */
export const UNREAD_PLAN_BACKOFF = { firstMs: 60_000, maxMs: 15 * 60_000, namedTries: 3 } as const

const backoffMs = (failures: number) =>
  Math.min(UNREAD_PLAN_BACKOFF.firstMs * 2 ** (failures - 1), UNREAD_PLAN_BACKOFF.maxMs)

/**
 * Management calls that name the usage plan or key they change: one that names none of the
 * stage's ids concerns another stage (or no stage) and costs this stage no sync. Other calls
 * (creating or updating a plan, tags, imports) can attach something to any stage: they always
 * sync.
 */
const SCOPED_EVENT_NAMES = new Set([
  'CreateUsagePlanKey',
  'DeleteUsagePlanKey',
  'UpdateApiKey',
  'DeleteApiKey',
  'DeleteUsagePlan',
])

/** What an API Gateway id looks like: a plan's or key's (10 lower-case letters and digits). */
const ID_PATTERN = /^[a-z0-9]{5,12}$/
/** Ids inside ARNs (TagResource's resourceArn: `arn:aws:apigateway:<region>::/usageplans/<id>`). */
const ARN_ID = /\/(?:usageplans|apikeys)\/([a-z0-9]{5,12})(?:\/|$)/g

/** Key ids listed per log line at most (the count is always complete; confirmations list all). */
const MAX_LOGGED_KEY_IDS = 50

/** What the handler needs of Powertools Metrics (tests pass a recorder). */
export interface MetricSink {
  addMetric(
    name: string,
    unit: (typeof MetricUnit)[keyof typeof MetricUnit],
    value: number,
  ): unknown
}

export interface KeySyncDependencies {
  source: KeySource
  mirror: Pick<KeyMirrorRepository, 'diff' | 'apply'>
  state: Pick<KeySyncStateRepository, 'get' | 'acquire' | 'complete' | 'release' | 'addPending'>
  flusher: AuthorizerCacheFlusher
  logger: AppLogger
  metrics: MetricSink
  clock: Clock
  /** Answers the deploy's custom resource (tests pass a recorder). */
  sendResponse: ResponseSender
  /** Logger context and metrics publishing: outermost, sees every outcome. */
  observability?: MiddlewareObj<KeySyncEvent, KeySyncResult, Error, Context>[]
}

export type SkipReason = 'other-stage' | 'lease-held' | 'stack-delete'

export interface KeySyncResult {
  /** Why nothing ran: another stage's change, a run in progress (it reads what this one named). */
  skipped: SkipReason | false
  /** Entries of the plans read (every valid key, after a read of every plan). */
  upserted: number
  /** Items written because they were new or changed. */
  written: number
  deleted: number
  /** Removals the guard withheld (see removal-guard.ts). */
  heldRemovals: number
  /** Whether the stage's authorizer cache was flushed after this run. */
  cacheFlushed: boolean
  refusedPlans: number
  refusedKeys: number
  managementCalls: number
  /** Stage plans whose keys were read, and whether that was every plan of the stage. */
  plansRead: number
  complete: boolean
}

/** The counts of a run that did nothing. */
export const NOTHING_DONE: Omit<KeySyncResult, 'skipped'> = {
  upserted: 0,
  written: 0,
  deleted: 0,
  heldRemovals: 0,
  cacheFlushed: false,
  refusedPlans: 0,
  refusedKeys: 0,
  managementCalls: 0,
  plansRead: 0,
  complete: false,
}

const skipped = (reason: SkipReason): KeySyncResult => ({ skipped: reason, ...NOTHING_DONE })

/** Every string in a CloudTrail event's requestParameters (ids of plans and keys among them). */
const stringsIn = (value: unknown, depth = 0): string[] => {
  if (typeof value === 'string') return [value]
  if (depth > 4 || typeof value !== 'object' || value === null) return []
  return Object.values(value).flatMap((child) => stringsIn(child, depth + 1))
}

/** The plan and key ids a management event names, ARNs included (never key values: too long). */
const idsIn = (requestParameters: unknown): string[] => {
  const ids = new Set<string>()
  for (const value of stringsIn(requestParameters)) {
    if (ID_PATTERN.test(value)) ids.add(value)
    for (const match of value.matchAll(ARN_ID)) ids.add(match[1] as string)
  }
  return [...ids].sort()
}

/** The ids an invoker names in `detail.ids` (plan and key ids only; anything else is dropped). */
const invokerIds = (detail: unknown): string[] => {
  const ids = (detail as { ids?: unknown } | null | undefined)?.ids
  return Array.isArray(ids)
    ? [...new Set(ids.filter((id): id is string => typeof id === 'string' && ID_PATTERN.test(id)))]
    : []
}

const isConfirmation = (event: unknown): event is { confirmRemovals: unknown } =>
  typeof event === 'object' && event !== null && 'confirmRemovals' in event

const remainingMs = (context: Context | undefined): number =>
  context?.getRemainingTimeInMillis?.() ?? FUNCTION_TIMEOUT_SECONDS.keySync * 1_000

/** One pass's outcome, summed over a run's passes. */
const addUp = (a: KeySyncResult, b: KeySyncResult): KeySyncResult => ({
  skipped: false,
  upserted: a.upserted + b.upserted,
  written: a.written + b.written,
  deleted: a.deleted + b.deleted,
  heldRemovals: a.heldRemovals + b.heldRemovals,
  cacheFlushed: a.cacheFlushed || b.cacheFlushed,
  refusedPlans: Math.max(a.refusedPlans, b.refusedPlans),
  refusedKeys: a.refusedKeys + b.refusedKeys,
  managementCalls: a.managementCalls + b.managementCalls,
  plansRead: a.plansRead + b.plansRead,
  complete: a.complete || b.complete,
})

/**
 * Keeps the stage's key mirror equal to API Gateway, one run at a time (a lease in the mirror
 * table), within a time budget, and never from a read it cannot trust:
 * 1. Each run reads the plan and key listings whole, then the keys of plans named by management
 *    events, then as many other plans as its budget allows, going on where the last run stopped:
 *    a few hundred plans are all read every run; at AWS's ceilings a rotation spans runs.
 * 2. A read that contradicts itself writes nothing and fails (the source throws).
 * 3. Puts come before deletes; removals that look like a bad read or a console slip are held
 *    (removal-guard.ts) and alarmed.
 * 4. After a run that changed the mirror, the stage's authorizer cache is flushed.
 * 5. Ids named by events that arrive while a run holds the lease are read by that run, or by
 *    the next one it starts itself, before it returns: no change waits for the schedule.
 * A failure is counted, logged and rethrown: the next run retries, and the mirror keeps what the
 * last successful run wrote. Every success is counted, so a schedule that stops alarms.
 */
export const keySyncHandler = (deps: KeySyncDependencies) => {
  const { source, mirror, state, flusher, logger, metrics, clock, sendResponse } = deps

  /** One read of API Gateway applied to the mirror: puts, then the removals the guard allows. */
  const pass = async (
    trigger: string,
    previous: KeySyncState,
    read: ReadOptions,
    held: KeySyncState['heldRemovals'],
    confirmed: ReadonlySet<string> | undefined,
    startedAt: number,
  ) => {
    const snapshot = await source.read(read)
    reportRefusals(snapshot)
    const validPlans = new Set(snapshot.validPlans.keys())
    const plansRead = new Set(snapshot.plansRead)
    // The key listing is read whole every run: a key disabled there (or past its disable-after
    // tag) leaves the mirror now, whichever plans this run read.
    const settled = [...snapshot.keys.values()].filter((key) => !key.usable).map((k) => k.keyId)
    const diff = await mirror.diff(snapshot.entries, {
      complete: snapshot.complete,
      plansRead,
      validPlans,
      keyIds: new Set([...snapshot.namedRead, ...settled]),
      listedKeyIds: new Set(snapshot.keys.keys()),
    })
    const moved = await movedEntries(snapshot, diff.staleItems)
    const movedHashes = new Set(moved.map(({ keyHash }) => keyHash))
    const deleted = await deletedKeys(diff.unlisted)
    const staleItems = [
      ...diff.staleItems.filter(({ keyHash }) => !movedHashes.has(keyHash)),
      ...deleted,
    ]
    const decision = decideRemovals({
      deletedKeyIds: new Set([...snapshot.deletedKeyIds, ...deleted.map(({ keyId }) => keyId)]),
      mirrorSize: diff.mirrorSize,
      planSizes: diff.planSizes,
      staleItems,
      validPlans,
      judged: (group) =>
        snapshot.complete ||
        group === WHOLE_MIRROR ||
        plansRead.has(group) ||
        !validPlans.has(group),
      held: held ?? {},
      nowMs: startedAt,
      ...(confirmed ? { confirmedKeyIds: confirmed } : {}),
    })
    for (const group of decision.groups) reportGroup(trigger, group)
    if (decision.lostPlans.length > 0) {
      logger.error('Usage plans with mirrored keys are no longer valid plans of this stage', {
        usagePlanIds: decision.lostPlans,
      })
    }
    const changed = [...diff.changed, ...moved]
    const applied = await mirror.apply(
      { entries: diff.entries, changed, stale: staleItems.map(({ keyHash }) => keyHash) },
      new Date(startedAt).toISOString(),
      { remove: decision.remove },
    )
    const result: KeySyncResult = {
      skipped: false,
      ...applied,
      heldRemovals: decision.withheld,
      cacheFlushed: false,
      refusedPlans: snapshot.refusedPlans.length,
      refusedKeys: snapshot.refusedKeyIds.length,
      managementCalls: snapshot.managementCalls,
      plansRead: snapshot.plansRead.length,
      complete: snapshot.complete,
    }
    return {
      result,
      snapshot,
      held: decision.held,
      lostPlans: decision.lostPlans.length,
      stageIds: snapshot.complete
        ? snapshot.stageIds
        : [...new Set([...(previous.stageIds ?? []), ...snapshot.stageIds])].sort(),
    }
  }

  /**
   * Mirrored keys that left the plans read but still exist and work: in a read of every plan
   * they are gone from the stage; otherwise they may be on a plan this run did not read, and
   * one call finds out (a key moved between plans never stops working on the way).
   */
  const movedEntries = async (
    snapshot: KeySourceSnapshot,
    staleItems: readonly { keyHash: string; keyId: string }[],
  ): Promise<KeyMirrorEntry[]> => {
    if (snapshot.complete || !source.validPlansOfKey) return []
    const found: KeyMirrorEntry[] = []
    let lookups = 0
    for (const { keyHash, keyId } of staleItems) {
      const key = snapshot.keys.get(keyId)
      if (!key?.usable || key.keyHash !== keyHash) continue
      lookups += 1
      if (lookups > MAX_MOVED_LOOKUPS) break
      const [planId] = await source.validPlansOfKey(keyId)
      const grant = planId === undefined ? undefined : snapshot.validPlans.get(planId)
      if (planId && grant) {
        found.push(mirrorEntry(keyHash, keyId, planId, grant))
      }
    }
    return found
  }

  /** Mirrored keys the key listing lacks that GetApiKey no longer finds: deleted. */
  const deletedKeys = async (unlisted: readonly StaleItem[]): Promise<StaleItem[]> => {
    if (!source.keyExists) return []
    const gone: StaleItem[] = []
    for (const item of unlisted.slice(0, MAX_MOVED_LOOKUPS)) {
      if (!(await source.keyExists(item.keyId))) gone.push(item)
    }
    return gone
  }

  const reportRefusals = (snapshot: KeySourceSnapshot) => {
    for (const { usagePlanId, reason } of snapshot.failedPlans) {
      logger.error('Usage plan could not be read: its keys stay as they are', {
        usagePlanId,
        reason,
      })
    }
    for (const { usagePlanId, reason } of snapshot.refusedPlans) {
      logger.error('Usage plan refused: its keys get 401', { usagePlanId, reason })
    }
    if (snapshot.refusedKeyIds.length > 0) {
      logger.warn('Keys refused for their plan tags', {
        count: snapshot.refusedKeyIds.length,
        keyIds: snapshot.refusedKeyIds.slice(0, MAX_LOGGED_KEY_IDS),
      })
    }
    if (snapshot.stagePlans === 0) {
      // Legitimate only if every plan was detached on purpose; a wrong REST_API_ID looks the same.
      logger.warn('No usage plan is attached to this API stage')
    }
  }

  const reportGroup = (trigger: string, group: GroupDecision) => {
    const fields = {
      trigger,
      group: group.group,
      cause: group.cause,
      removals: group.keyIds.length,
      keyIds: group.keyIds.slice(0, MAX_LOGGED_KEY_IDS),
    }
    if (group.outcome === 'held') {
      logger.error('Key sync withheld a removal: confirm it or wait for runs to agree', {
        ...fields,
        firstSeenAt: new Date(group.firstSeenAt).toISOString(),
        confirm: { confirmRemovals: group.keyIds },
      })
    } else logger.warn('Key sync applies a held removal', { ...fields, reason: group.outcome })
  }

  /**
   * What a run leaves about faults and pending ids: plans it could not read (retried with a
   * backoff), ids it is done with (read, settled by a rotation that began after they were named,
   * or given up after a few failed tries), and the tries of the others.
   */
  const bookkeeping = (
    previous: KeySyncState,
    snapshot: KeySourceSnapshot,
    rotationStartedAt: number,
    nowMs: number,
  ) => {
    const stagePlans = new Set([
      ...snapshot.validPlans.keys(),
      ...snapshot.refusedPlans.map(({ usagePlanId }) => usagePlanId),
    ])
    const unreadPlans = Object.fromEntries(
      Object.entries(previous.unreadPlans ?? {}).filter(
        ([planId]) => stagePlans.has(planId) && !snapshot.plansRead.includes(planId),
      ),
    )
    for (const { usagePlanId, reason } of snapshot.failedPlans) {
      const failures = (unreadPlans[usagePlanId]?.failures ?? 0) + 1
      unreadPlans[usagePlanId] = {
        failures,
        since: unreadPlans[usagePlanId]?.since ?? nowMs,
        retryAt: nowMs + backoffMs(failures),
        reason,
      }
    }
    const done = new Set(snapshot.namedRead)
    if (snapshot.rotationDone) {
      // Every plan was read since these were named: nothing of them is left to read.
      for (const id of previous.pendingIds ?? []) {
        const latest = previous.pendingNamedAt?.[id]?.at(-1)
        if (latest !== undefined && latest < rotationStartedAt) done.add(id)
      }
    }
    const namedTries: Record<string, number> = {}
    const failedNamed = new Set(snapshot.namedFailed)
    const givenUp: string[] = []
    for (const id of previous.pendingIds ?? []) {
      if (done.has(id)) continue
      const tries = (previous.namedTries?.[id] ?? 0) + (failedNamed.has(id) ? 1 : 0)
      if (tries >= UNREAD_PLAN_BACKOFF.namedTries) {
        givenUp.push(id)
        done.add(id)
      } else if (tries > 0) namedTries[id] = tries
    }
    if (givenUp.length > 0) {
      logger.error('Ids named by events whose plans keep failing are left to the rotation', {
        ids: givenUp.slice(0, MAX_LOGGED_KEY_IDS),
        count: givenUp.length,
      })
    }
    return {
      unreadPlans,
      namedTries,
      drained: (previous.pendingIds ?? []).filter((id) => done.has(id)),
    }
  }

  /** One run under the lease: a pass over what is pending, the rotation, and the bookkeeping. */
  const runUnderLease = async (
    trigger: string,
    owner: string,
    previous: KeySyncState,
    endBy: number,
    confirmed: ReadonlySet<string> | undefined,
    namedOnly: boolean,
    taken: readonly string[],
  ): Promise<KeySyncResult> => {
    const startedAt = clock()
    const takenIds = new Set(taken)
    const skipPlans = new Set(
      Object.entries(previous.unreadPlans ?? {})
        .filter(([, unread]) => unread.retryAt > startedAt)
        .map(([planId]) => planId),
    )
    const first = await pass(
      trigger,
      previous,
      {
        deadlineMs: Math.min(endBy, startedAt + RUN_BUDGET.rotationMs),
        // Looking up named keys one by one takes at most half the rotation's time.
        lookupDeadlineMs: startedAt + RUN_BUDGET.rotationMs / 2,
        priorityIds: taken,
        skipPlans,
        // An event named meanwhile ends the reading: the next pass reads it, within seconds.
        interrupted: async () =>
          ((await state.get()).pendingIds ?? []).some((id) => !takenIds.has(id)),
        ...(previous.cursor !== undefined ? { cursor: previous.cursor } : {}),
        // An event's run reads what events named and leaves the rotation to the schedule: a
        // change is in force seconds after its event, at any plan count.
        ...(namedOnly && taken.length > 0 ? { onlyNamed: true } : {}),
      },
      previous.heldRemovals,
      confirmed,
      startedAt,
    )
    const { held, stageIds, lostPlans } = first
    let total = first.result

    const changed = total.written + total.deleted > 0
    let flushPending = previous.flushPending === true || changed
    if (flushPending) {
      try {
        await flusher.flush()
        // Once more on the next run after a change: an authorizer call that read the mirror
        // before this run's writes can cache its answer just after this flush.
        flushPending = changed
        total = { ...total, cacheFlushed: true }
      } catch (error) {
        // The mirror is right; cached decisions may outlive it until the next run's flush.
        metrics.addMetric(KEY_SYNC_METRICS.cacheFlushFailures, MetricUnit.Count, 1)
        logger.error('Authorizer cache flush failed: the next run retries it', {
          error: withOriginalStack(error),
        })
      }
    }
    // A run that finds no cursor starts a rotation; the run that reads the last plan ends it. A
    // run that read only what events named leaves the rotation as it was.
    const rotationStartedAt =
      previous.cursor === undefined ? startedAt : (previous.rotationStartedAt ?? startedAt)
    const { cursor, rotationDone } = first.snapshot
    const lastCompleteAt = rotationDone ? rotationStartedAt : previous.lastCompleteAt
    const kept = bookkeeping(previous, first.snapshot, rotationStartedAt, startedAt)
    await state.complete(owner, {
      ...(Object.keys(held).length > 0 ? { heldRemovals: held } : {}),
      ...(cursor !== undefined ? { cursor, rotationStartedAt } : {}),
      ...(lastCompleteAt !== undefined ? { lastCompleteAt } : {}),
      unreadPlans: kept.unreadPlans,
      namedTries: kept.namedTries,
      flushPending,
      stageIds,
      lastSuccessAt: startedAt,
      // Ids this run could not get to (its budget ran out) stay pending for the next.
      pendingIds: kept.drained,
      ...(previous.pendingNamedAt ? { pendingNamedAt: previous.pendingNamedAt } : {}),
    })
    logger.info('Key mirror synced', {
      trigger,
      ...total,
      stagePlans: first.snapshot.stagePlans,
      disabledKeys: first.snapshot.disabledKeys,
      durationMs: clock() - startedAt,
    })
    metrics.addMetric(KEY_SYNC_METRICS.keysMirrored, MetricUnit.Count, total.upserted)
    metrics.addMetric(KEY_SYNC_METRICS.keysRemoved, MetricUnit.Count, total.deleted)
    metrics.addMetric(KEY_SYNC_METRICS.removalsHeld, MetricUnit.Count, total.heldRemovals)
    metrics.addMetric(KEY_SYNC_METRICS.invalidPlans, MetricUnit.Count, total.refusedPlans)
    metrics.addMetric(KEY_SYNC_METRICS.plansLost, MetricUnit.Count, lostPlans)
    metrics.addMetric(
      KEY_SYNC_METRICS.unreadPlans,
      MetricUnit.Count,
      Object.keys(kept.unreadPlans).length,
    )
    metrics.addMetric(KEY_SYNC_METRICS.refusedKeys, MetricUnit.Count, total.refusedKeys)
    metrics.addMetric(KEY_SYNC_METRICS.managementCalls, MetricUnit.Count, total.managementCalls)
    if (lastCompleteAt !== undefined) {
      metrics.addMetric(
        KEY_SYNC_METRICS.rotationAge,
        MetricUnit.Seconds,
        Math.round((clock() - lastCompleteAt) / 1_000),
      )
    }
    metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 0)
    metrics.addMetric(KEY_SYNC_METRICS.succeeded, MetricUnit.Count, 1)
    return total
  }

  const sync = async (
    trigger: string,
    context: Context | undefined,
    confirmed?: ReadonlySet<string>,
    namedOnly = false,
  ): Promise<KeySyncResult> => {
    const endBy = clock() + remainingMs(context) - RUN_BUDGET.reserveMs
    let total: KeySyncResult | undefined
    // Ids a pass of this invocation was given, and when: a re-pass reads only ids named since (a
    // failing plan is tried once per invocation, a backlog left to the rotation is not looked up
    // again).
    const attempted = new Map<string, number>()
    const fresh = ({ pendingIds = [], pendingNamedAt }: KeySyncState) =>
      pendingIds.filter((id) => {
        const at = attempted.get(id)
        return at === undefined || (pendingNamedAt?.[id]?.at(-1) ?? 0) > at
      })
    // Runs again, on what events named, while ids are pending after a run gave the lease up:
    // named while it read (their own runs found the lease taken and returned), as long as the
    // budget allows a pass.
    do {
      const owner = randomUUID()
      const previous = await state.acquire(owner, clock(), LEASE_MS)
      if (!previous) {
        if (total) break
        logger.info('Key sync skipped: another run holds the lease and reads what this named', {
          trigger,
        })
        return skipped('lease-held')
      }
      const taken = fresh(previous)
      if (total && taken.length === 0) {
        // Another run read them in between.
        await state.release(owner)
        break
      }
      for (const id of taken) attempted.set(id, clock())
      try {
        const result = await runUnderLease(
          trigger,
          owner,
          previous,
          endBy,
          confirmed,
          namedOnly || total !== undefined,
          taken,
        )
        total = total ? addUp(total, result) : result
      } catch (error) {
        await state.release(owner).catch(() => undefined)
        metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 1)
        logger.error('Key sync failed: the previous mirror stays in place', {
          trigger,
          error: withOriginalStack(error),
        })
        throw error
      }
    } while (fresh(await state.get()).length > 0 && clock() + RUN_BUDGET.minPassMs <= endBy)
    return total
  }

  /**
   * The deploy's sync answers CloudFormation first, always SUCCESS, then syncs: a slow or failing
   * sync is alarmed and retried by the schedule, never a failed deploy or a stuck rollback. The
   * plans the template names are read first. Delete (a stack deletion or a rollback's cleanup)
   * only answers.
   */
  const deploySync = async (event: CloudFormationCustomResourceEvent, context: Context) => {
    const answer: CustomResourceAnswer = { status: 'SUCCESS' }
    try {
      await sendResponse(event.ResponseURL, customResourceResponse(event, answer))
    } catch (error) {
      logger.error('Could not answer CloudFormation', { error: withOriginalStack(error) })
    }
    if (event.RequestType === 'Delete') return skipped('stack-delete')
    const planIds = (event.ResourceProperties as { UsagePlanIds?: unknown }).UsagePlanIds
    await state.addPending(
      Array.isArray(planIds) ? planIds.filter((id): id is string => typeof id === 'string') : [],
      clock(),
    )
    return sync(`CloudFormation ${event.RequestType}`, context)
  }

  /** A management event another stage's change caused. */
  const isOtherStage = async (detail: { eventName?: unknown; requestParameters?: unknown }) => {
    if (typeof detail.eventName !== 'string' || !SCOPED_EVENT_NAMES.has(detail.eventName)) {
      return false
    }
    const { stageIds } = await state.get()
    if (!stageIds) return false
    const known = new Set(stageIds)
    return !stringsIn(detail.requestParameters).some((value) => known.has(value))
  }

  return middy<KeySyncEvent, KeySyncResult, Error, Context>()
    .use(deps.observability ?? [])
    .handler(async (event, context) => {
      if (isCustomResourceEvent(event)) return deploySync(event, context)
      if (isConfirmation(event)) {
        const ids = event.confirmRemovals
        if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) {
          logger.error(
            'confirmRemovals takes the key ids the held removal lists; nothing confirmed',
          )
          return sync('operator confirmation (invalid)', context)
        }
        return sync('operator confirmation', context, new Set(ids))
      }
      const trigger = event?.['detail-type'] ?? 'unknown'
      if (trigger === MANAGEMENT_EVENT) {
        const detail = (event.detail ?? {}) as {
          eventName?: unknown
          requestParameters?: unknown
        }
        if (await isOtherStage(detail)) {
          logger.info('Key sync skipped', { trigger, reason: 'other-stage' })
          return skipped('other-stage')
        }
        // Recorded before the lease is tried: a run holding it reads them before it returns.
        const ids = idsIn(detail.requestParameters)
        await state.addPending(ids, clock())
        return sync(trigger, context, undefined, ids.length > 0)
      }
      // An invoker that made a change (the keys CLI) names its plan and key ids: they are read
      // first, at any plan count, as an event's are.
      const ids = invokerIds(event.detail)
      await state.addPending(ids, clock())
      return sync(trigger, context, undefined, ids.length > 0)
    })
}
