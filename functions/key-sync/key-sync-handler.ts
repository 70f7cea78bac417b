import { MetricUnit } from '@aws-lambda-powertools/metrics'
import middy from '@middy/core'
import type { Context, EventBridgeEvent } from 'aws-lambda'
import type { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { KeySource } from './api-gateway-key-source.ts'

/**
 * What invokes the sync: the EventBridge schedule ("Scheduled Event") or an API Gateway
 * management call ("AWS API Call via CloudTrail", source aws.apigateway). Either way the whole
 * mirror is rebuilt; only the trigger's name is logged (CloudTrail details may carry key data).
 */
export type KeySyncEvent = EventBridgeEvent<string, unknown>

export const SCHEDULED_EVENT = 'Scheduled Event'

/** Management events this soon after the last successful run's start are coalesced into it. */
export const MIN_EVENT_INTERVAL_MS = 10_000

/** Refused key ids listed per log line at most (the count is always complete). */
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
  mirror: Pick<KeyMirrorRepository, 'replaceAll'>
  logger: AppLogger
  metrics: MetricSink
  clock: Clock
  minEventIntervalMs?: number
}

export interface KeySyncResult {
  /** True when a management event arrived right after a run and was coalesced into it. */
  skipped: boolean
  upserted: number
  /** Items written because they were new or changed. */
  written: number
  deleted: number
  refusedPlans: number
  refusedKeys: number
  managementCalls: number
}

const SKIPPED: KeySyncResult = {
  skipped: true,
  upserted: 0,
  written: 0,
  deleted: 0,
  refusedPlans: 0,
  refusedKeys: 0,
  managementCalls: 0,
}

/**
 * Rebuilds the stage's key mirror from API Gateway. A failure (API Gateway or DynamoDB) is
 * counted, logged and rethrown: Lambda records the error, the next run retries, and the mirror
 * keeps what the last successful run wrote (a read failure writes nothing at all).
 *
 * A burst of management calls (a script creating keys, a deploy) would otherwise start one full
 * sync per call and spend the very quota this design protects, so events within
 * MIN_EVENT_INTERVAL_MS of the last successful start are skipped; the schedule always runs and
 * bounds the delay.
 */
export const createKeySyncHandler = (deps: KeySyncDependencies) => {
  const { source, mirror, logger, metrics, clock } = deps
  const minEventIntervalMs = deps.minEventIntervalMs ?? MIN_EVENT_INTERVAL_MS
  let lastSuccessStartedAt: number | undefined

  return middy<KeySyncEvent, KeySyncResult, Error, Context>().handler(async (event) => {
    const trigger = event?.['detail-type'] ?? 'unknown'
    const startedAt = clock()
    if (
      trigger !== SCHEDULED_EVENT &&
      lastSuccessStartedAt !== undefined &&
      startedAt - lastSuccessStartedAt < minEventIntervalMs
    ) {
      logger.info('Key sync skipped: a run just started', { trigger })
      return SKIPPED
    }
    try {
      const snapshot = await source.read()
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
        logger.warn('No usage plan is attached to this API stage: the mirror will be empty')
      }
      const { upserted, written, deleted } = await mirror.replaceAll(
        snapshot.entries,
        new Date(startedAt).toISOString(),
      )
      lastSuccessStartedAt = startedAt
      const result: KeySyncResult = {
        skipped: false,
        upserted,
        written,
        deleted,
        refusedPlans: snapshot.refusedPlans.length,
        refusedKeys: snapshot.refusedKeyIds.length,
        managementCalls: snapshot.managementCalls,
      }
      logger.info('Key mirror synced', {
        trigger,
        ...result,
        stagePlans: snapshot.stagePlans,
        disabledKeys: snapshot.disabledKeys,
        durationMs: clock() - startedAt,
      })
      metrics.addMetric(KEY_SYNC_METRICS.keysMirrored, MetricUnit.Count, upserted)
      metrics.addMetric(KEY_SYNC_METRICS.keysRemoved, MetricUnit.Count, deleted)
      metrics.addMetric(KEY_SYNC_METRICS.invalidPlans, MetricUnit.Count, result.refusedPlans)
      metrics.addMetric(KEY_SYNC_METRICS.refusedKeys, MetricUnit.Count, result.refusedKeys)
      metrics.addMetric(KEY_SYNC_METRICS.managementCalls, MetricUnit.Count, result.managementCalls)
      metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 0)
      return result
    } catch (error) {
      metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 1)
      logger.error('Key sync failed: the previous mirror stays in place', {
        trigger,
        error: withOriginalStack(error),
      })
      throw error
    }
  })
}
