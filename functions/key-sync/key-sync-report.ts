import { MetricUnit } from '@aws-lambda-powertools/metrics'
import type { KeySourceSnapshot } from '#keys/api-gateway-key-source.ts'
import { type KeySyncResult, NOTHING_DONE, type SkipReason } from '#keys/key-sync-contract.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { GroupDecision } from './removal-guard.ts'

/** Key ids listed per log line at most (the count is always complete; confirmations list all). */
export const MAX_LOGGED_KEY_IDS = 50

/** What the handler needs of Powertools Metrics (tests pass a recorder). */
export interface MetricSink {
  addMetric(
    name: string,
    unit: (typeof MetricUnit)[keyof typeof MetricUnit],
    value: number,
  ): unknown
}

export const skipped = (reason: SkipReason): KeySyncResult => ({ skipped: reason, ...NOTHING_DONE })

/** One pass's outcome, summed over a run's passes. */
export const addUp = (a: KeySyncResult, b: KeySyncResult): KeySyncResult => ({
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

/** What one run under the lease reports once it has saved its state. */
export interface RunReport {
  trigger: string
  total: KeySyncResult
  snapshot: KeySourceSnapshot
  lostPlans: number
  unreadPlans: number
  lastCompleteAt: number | undefined
  startedAt: number
}

/** A run's log lines and metrics: what it refused, what it held, and its counts. */
export const keySyncReport = (logger: AppLogger, metrics: MetricSink, clock: Clock) => ({
  refusals: (snapshot: KeySourceSnapshot) => {
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
  },

  group: (trigger: string, group: GroupDecision) => {
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
  },

  /** The line and the metrics of a run that saved its state. */
  synced: ({
    trigger,
    total,
    snapshot,
    lostPlans,
    unreadPlans,
    lastCompleteAt,
    startedAt,
  }: RunReport) => {
    logger.info('Key mirror synced', {
      trigger,
      ...total,
      stagePlans: snapshot.stagePlans,
      disabledKeys: snapshot.disabledKeys,
      durationMs: clock() - startedAt,
    })
    metrics.addMetric(KEY_SYNC_METRICS.keysMirrored, MetricUnit.Count, total.upserted)
    metrics.addMetric(KEY_SYNC_METRICS.keysRemoved, MetricUnit.Count, total.deleted)
    metrics.addMetric(KEY_SYNC_METRICS.removalsHeld, MetricUnit.Count, total.heldRemovals)
    metrics.addMetric(KEY_SYNC_METRICS.invalidPlans, MetricUnit.Count, total.refusedPlans)
    metrics.addMetric(KEY_SYNC_METRICS.plansLost, MetricUnit.Count, lostPlans)
    metrics.addMetric(KEY_SYNC_METRICS.unreadPlans, MetricUnit.Count, unreadPlans)
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
  },
})

export type KeySyncReport = ReturnType<typeof keySyncReport>
