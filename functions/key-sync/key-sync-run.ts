import { randomUUID } from 'node:crypto'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import type { Context } from 'aws-lambda'
import type { KeySource, KeySourceSnapshot, ReadOptions } from '#keys/api-gateway-key-source.ts'
import type { AuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import type { KeyMirrorWriter, StaleItem } from '#keys/key-mirror-writer.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import type { KeySyncState, KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import { mirrorEntry } from '#keys/key-verdicts.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import type { Clock } from '#shared/time/clock.ts'
import {
  addUp,
  type KeySyncReport,
  MAX_LOGGED_KEY_IDS,
  type MetricSink,
  skipped,
} from './key-sync-report.ts'
import { decideRemovals, WHOLE_MIRROR } from './removal-guard.ts'

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

/** What a run reads, writes and reports to. */
export interface KeySyncRunDependencies {
  source: KeySource
  mirror: Pick<KeyMirrorWriter, 'diff' | 'apply'>
  state: Pick<KeySyncStateRepository, 'get' | 'acquire' | 'complete' | 'release' | 'addPending'>
  flusher: AuthorizerCacheFlusher
  logger: AppLogger
  metrics: MetricSink
  clock: Clock
}

/** The run's own log lines and metrics (key-sync-report.ts). */
interface RunContext extends KeySyncRunDependencies {
  report: KeySyncReport
}

/** What an invocation asks of the sync (key-sync-handler.ts). */
export interface KeySyncRequest {
  /** What started it, for the log: a schedule, an event, a deploy, an operator. */
  trigger: string
  /** The invocation's context: its remaining time bounds the run. */
  context: Context | undefined
  /** Key ids an operator confirmed the held removals of. */
  confirmed?: ReadonlySet<string> | undefined
  /** Read only what events named, leaving the rotation to the schedule. */
  namedOnly?: boolean
}

/** One run under the lease: what it was asked, what it holds and how long it may take. */
interface LeaseRun {
  trigger: string
  /** This run's lease owner. */
  owner: string
  /** The sync's state as the lease found it. */
  previous: KeySyncState
  /** No pass starts after this instant (ms since the epoch). */
  endBy: number
  confirmed: ReadonlySet<string> | undefined
  namedOnly: boolean
  /** The pending ids this run took. */
  taken: readonly string[]
}

const remainingMs = (context: Context | undefined): number =>
  context?.getRemainingTimeInMillis?.() ?? FUNCTION_TIMEOUT_SECONDS.keySync * 1_000

/** One read of API Gateway applied to the mirror: puts, then the removals the guard allows. */
const pass = async (
  { source, mirror, logger, report }: RunContext,
  { trigger, previous, confirmed }: LeaseRun,
  read: ReadOptions,
  startedAt: number,
) => {
  const held = previous.heldRemovals
  const snapshot = await source.read(read)
  report.refusals(snapshot)
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
  const moved = await movedEntries(source, snapshot, diff.staleItems)
  const movedHashes = new Set(moved.map(({ keyHash }) => keyHash))
  const inScope = diff.staleItems.filter(({ keyHash }) => !movedHashes.has(keyHash))
  const deleted = await deletedKeys(source, diff.unlisted)
  // Stale keys of the plans read that the key listing lacks too: deleted, once GetApiKey agrees
  // (their removal is then never held), or a listing a moment behind (the guard judges them).
  const unlistedInScope = inScope.filter(({ keyId }) => !snapshot.keys.has(keyId))
  const confirmedDeleted = await deletedKeys(source, unlistedInScope)
  const staleItems = [...inScope, ...deleted]
  const decision = decideRemovals({
    deletedKeyIds: new Set([
      ...snapshot.deletedKeyIds,
      ...[...deleted, ...confirmedDeleted].map(({ keyId }) => keyId),
    ]),
    mirrorSize: diff.mirrorSize,
    planSizes: diff.planSizes,
    staleItems,
    validPlans,
    judged: (group) =>
      snapshot.complete || group === WHOLE_MIRROR || plansRead.has(group) || !validPlans.has(group),
    held: held ?? {},
    nowMs: startedAt,
    ...(confirmed ? { confirmedKeyIds: confirmed } : {}),
  })
  for (const group of decision.groups) report.group(trigger, group)
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
  source: KeySource,
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
const deletedKeys = async (
  source: KeySource,
  unlisted: readonly StaleItem[],
): Promise<StaleItem[]> => {
  if (!source.keyExists) return []
  const gone: StaleItem[] = []
  for (const item of unlisted.slice(0, MAX_MOVED_LOOKUPS)) {
    if (!(await source.keyExists(item.keyId))) gone.push(item)
  }
  return gone
}

/**
 * What a run leaves about faults and pending ids: plans it could not read (retried with a
 * backoff), ids it is done with (read, settled by a rotation that began after they were named,
 * or given up after a few failed tries), and the tries of the others.
 */
const bookkeeping = (
  logger: AppLogger,
  previous: KeySyncState,
  snapshot: KeySourceSnapshot,
  { rotationStartedAt, nowMs }: { rotationStartedAt: number; nowMs: number },
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
const runUnderLease = async (context: RunContext, lease: LeaseRun): Promise<KeySyncResult> => {
  const { state, flusher, logger, metrics, clock, report } = context
  const { trigger, owner, previous, endBy, namedOnly, taken } = lease
  const startedAt = clock()
  const takenIds = new Set(taken)
  const skipPlans = new Set(
    Object.entries(previous.unreadPlans ?? {})
      .filter(([, unread]) => unread.retryAt > startedAt)
      .map(([planId]) => planId),
  )
  const first = await pass(
    context,
    lease,
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
  const kept = bookkeeping(logger, previous, first.snapshot, {
    rotationStartedAt,
    nowMs: startedAt,
  })
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
  report.synced({
    trigger,
    total,
    snapshot: first.snapshot,
    lostPlans,
    unreadPlans: Object.keys(kept.unreadPlans).length,
    lastCompleteAt,
    startedAt,
  })
  return total
}

/**
 * A run of the sync for one invocation: under the lease, then again on what events named while it
 * ran, as long as the budget allows a pass (key-sync-handler.ts has the whole story).
 */
export const keySyncRun = (deps: KeySyncRunDependencies, report: KeySyncReport) => {
  const run: RunContext = { ...deps, report }
  const { state, logger, metrics, clock } = deps
  return async ({
    trigger,
    context,
    confirmed,
    namedOnly = false,
  }: KeySyncRequest): Promise<KeySyncResult> => {
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
        const result = await runUnderLease(run, {
          trigger,
          owner,
          previous,
          endBy,
          confirmed,
          namedOnly: namedOnly || total !== undefined,
          taken,
        })
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
}
