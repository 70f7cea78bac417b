import { randomUUID } from 'node:crypto'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import middy, { type MiddlewareObj } from '@middy/core'
import type { CloudFormationCustomResourceEvent, Context, EventBridgeEvent } from 'aws-lambda'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import type { KeySyncStateRepository } from '#shared/data/key-sync-state-repository.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { KeySource } from './api-gateway-key-source.ts'
import type { AuthorizerCacheFlusher } from './authorizer-cache-flusher.ts'
import {
  type CustomResourceAnswer,
  customResourceResponse,
  isCustomResourceEvent,
  type ResponseSender,
} from './cloudformation-response.ts'
import { decideRemovals } from './removal-guard.ts'

/**
 * What invokes the sync: the EventBridge schedule ("Scheduled Event"), an API Gateway management
 * call ("AWS API Call via CloudTrail", source aws.apigateway), the deploy (a CloudFormation custom
 * resource event), or an operator confirming a held removal (`{"confirmRemovals": <count>}`).
 * Whatever the trigger, the whole mirror is rebuilt; only the trigger's name is logged
 * (CloudTrail details may carry key data).
 */
export type KeySyncEvent =
  | EventBridgeEvent<string, unknown>
  | CloudFormationCustomResourceEvent
  | ConfirmRemovalsEvent

/**
 * An operator's confirmation of the removal the guard holds: the number of keys it would remove,
 * as the alarm and the log report it. A different number confirms nothing.
 *
 * @example
 * aws lambda invoke --function-name <KeySyncFunctionName> \
 *   --cli-binary-format raw-in-base64-out --payload '{"confirmRemovals":11}' /dev/stdout
 */
export interface ConfirmRemovalsEvent {
  confirmRemovals: number
}

export const SCHEDULED_EVENT = 'Scheduled Event'
const MANAGEMENT_EVENT = 'AWS API Call via CloudTrail'

/** Management events this soon after the last successful run's start are coalesced into it. */
export const MIN_EVENT_INTERVAL_MS = 10_000

/**
 * The lease outlives the function's timeout by 30 s (90 s), so a run that dies holds it no longer
 * than this, and never shorter than a live run.
 */
export const LEASE_MS = (FUNCTION_TIMEOUT_SECONDS.keySync + 30) * 1_000

/** How long the deploy's sync waits for a run in progress (it then leaves the mirror to it). */
const DEPLOY_LEASE_WAIT = { attempts: 10, delayMs: 2_000 }

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
  mirror: Pick<KeyMirrorRepository, 'diff' | 'apply'>
  state: Pick<KeySyncStateRepository, 'get' | 'acquire' | 'complete' | 'release'>
  flusher: AuthorizerCacheFlusher
  logger: AppLogger
  metrics: MetricSink
  clock: Clock
  /** Answers the deploy's custom resource (tests pass a recorder). */
  sendResponse: ResponseSender
  sleep?: (ms: number) => Promise<void>
  minEventIntervalMs?: number
  /** Logger context and metrics publishing: outermost, sees every outcome. */
  observability?: MiddlewareObj<KeySyncEvent, KeySyncResult, Error, Context>[]
}

export type SkipReason = 'coalesced' | 'other-stage' | 'lease-held'

export interface KeySyncResult {
  /** Why nothing ran: an event right after a run, another stage's change, a run in progress. */
  skipped: SkipReason | false
  upserted: number
  /** Items written because they were new or changed. */
  written: number
  deleted: number
  /** Removals the guard withheld (a mass removal not yet agreed or confirmed). */
  heldRemovals: number
  /** Whether the stage's authorizer cache was flushed after this run. */
  cacheFlushed: boolean
  refusedPlans: number
  refusedKeys: number
  managementCalls: number
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
}

const skipped = (reason: SkipReason): KeySyncResult => ({ skipped: reason, ...NOTHING_DONE })

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Every string in a CloudTrail event's requestParameters (ids of plans and keys among them). */
const stringsIn = (value: unknown, depth = 0): string[] => {
  if (typeof value === 'string') return [value]
  if (depth > 4 || typeof value !== 'object' || value === null) return []
  return Object.values(value).flatMap((child) => stringsIn(child, depth + 1))
}

const isConfirmation = (event: unknown): event is ConfirmRemovalsEvent =>
  typeof (event as { confirmRemovals?: unknown } | null)?.confirmRemovals === 'number'

/**
 * Rebuilds the stage's key mirror from API Gateway, one run at a time (a lease in the mirror
 * table), and never from a read it cannot trust:
 * 1. A read that contradicts itself writes nothing and fails (the source throws).
 * 2. Puts come before deletes; a mass removal is held (see removal-guard.ts) and alarmed.
 * 3. After a run that changed the mirror, the stage's authorizer cache is flushed, so a change
 *    applies within a sync with no cache TTL on top (a failed flush is retried by the next run).
 * A failure is counted, logged and rethrown: the next run retries, and the mirror keeps what the
 * last successful run wrote. Every success is counted, so a schedule that stops alarms.
 */
export const keySyncHandler = (deps: KeySyncDependencies) => {
  const { source, mirror, state, flusher, logger, metrics, clock, sendResponse } = deps
  const sleep = deps.sleep ?? defaultSleep
  const minEventIntervalMs = deps.minEventIntervalMs ?? MIN_EVENT_INTERVAL_MS
  let lastSuccessStartedAt: number | undefined

  const acquireLease = async (owner: string, waitForLease: boolean) => {
    for (let attempt = 1; ; attempt += 1) {
      const current = await state.acquire(owner, clock(), LEASE_MS)
      if (current || !waitForLease || attempt >= DEPLOY_LEASE_WAIT.attempts) return current
      await sleep(DEPLOY_LEASE_WAIT.delayMs)
    }
  }

  const sync = async (
    trigger: string,
    options: { waitForLease?: boolean; confirmedCount?: number } = {},
  ): Promise<KeySyncResult> => {
    const startedAt = clock()
    const owner = randomUUID()
    const previous = await acquireLease(owner, options.waitForLease === true)
    if (!previous) {
      logger.info('Key sync skipped: another run holds the lease', { trigger })
      return skipped('lease-held')
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
        logger.warn('No usage plan is attached to this API stage')
      }

      const diff = await mirror.diff(snapshot.entries)
      const decision = decideRemovals({
        mirrorSize: diff.mirrorSize,
        stale: diff.stale,
        held: previous.heldRemoval,
        nowMs: startedAt,
        ...(options.confirmedCount !== undefined ? { confirmedCount: options.confirmedCount } : {}),
      })
      if (!decision.remove) {
        logger.error('Key sync withheld a mass removal: confirm it or wait for runs to agree', {
          trigger,
          mirrorSize: diff.mirrorSize,
          removals: diff.stale.length,
          firstSeenAt: new Date(decision.held.firstSeenAt).toISOString(),
          confirm: { confirmRemovals: diff.stale.length },
        })
      } else if (decision.reason === 'agreed' || decision.reason === 'confirmed') {
        logger.warn('Key sync applies a mass removal', {
          trigger,
          reason: decision.reason,
          removals: diff.stale.length,
        })
      }
      const { upserted, written, deleted } = await mirror.apply(
        diff,
        new Date(startedAt).toISOString(),
        { removeStale: decision.remove },
      )

      let flushPending = previous.flushPending === true || written + deleted > 0
      let cacheFlushed = false
      if (flushPending) {
        try {
          await flusher.flush()
          flushPending = false
          cacheFlushed = true
        } catch (error) {
          // The mirror is right; cached decisions may outlive it until the next run's flush.
          metrics.addMetric(KEY_SYNC_METRICS.cacheFlushFailures, MetricUnit.Count, 1)
          logger.error('Authorizer cache flush failed: the next run retries it', {
            error: withOriginalStack(error),
          })
        }
      }
      await state.complete(owner, {
        ...(decision.remove ? {} : { heldRemoval: decision.held }),
        flushPending,
        stageIds: snapshot.stageIds,
        lastSuccessAt: startedAt,
      })
      lastSuccessStartedAt = startedAt
      const result: KeySyncResult = {
        skipped: false,
        upserted,
        written,
        deleted,
        heldRemovals: decision.remove ? 0 : diff.stale.length,
        cacheFlushed,
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
      metrics.addMetric(KEY_SYNC_METRICS.removalsHeld, MetricUnit.Count, result.heldRemovals)
      metrics.addMetric(KEY_SYNC_METRICS.invalidPlans, MetricUnit.Count, result.refusedPlans)
      metrics.addMetric(KEY_SYNC_METRICS.refusedKeys, MetricUnit.Count, result.refusedKeys)
      metrics.addMetric(KEY_SYNC_METRICS.managementCalls, MetricUnit.Count, result.managementCalls)
      metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 0)
      metrics.addMetric(KEY_SYNC_METRICS.succeeded, MetricUnit.Count, 1)
      return result
    } catch (error) {
      await state.release(owner).catch(() => undefined)
      metrics.addMetric(KEY_SYNC_METRICS.failures, MetricUnit.Count, 1)
      logger.error('Key sync failed: the previous mirror stays in place', {
        trigger,
        error: withOriginalStack(error),
      })
      throw error
    }
  }

  /** The deploy's sync: CloudFormation always gets an answer, or it would wait for its timeout. */
  const deploySync = async (event: CloudFormationCustomResourceEvent) => {
    let answer: CustomResourceAnswer = { status: 'SUCCESS' }
    let result: KeySyncResult | undefined
    if (event.RequestType !== 'Delete') {
      try {
        result = await sync(`CloudFormation ${event.RequestType}`, { waitForLease: true })
        answer = {
          status: 'SUCCESS',
          data: { keysMirrored: result.upserted, skipped: String(result.skipped) },
        }
      } catch (error) {
        answer = { status: 'FAILED', reason: `Key sync failed: ${(error as Error).message}` }
      }
    }
    await sendResponse(event.ResponseURL, customResourceResponse(event, answer))
    return result ?? skipped('lease-held')
  }

  /** A management event another stage's change caused, or coalesced into the last run. */
  const skipReasonOf = async (
    event: EventBridgeEvent<string, unknown>,
  ): Promise<SkipReason | undefined> => {
    const startedAt = clock()
    if (
      lastSuccessStartedAt !== undefined &&
      startedAt - lastSuccessStartedAt < minEventIntervalMs
    ) {
      return 'coalesced'
    }
    const detail = event.detail as { eventName?: unknown; requestParameters?: unknown } | undefined
    if (typeof detail?.eventName !== 'string' || !SCOPED_EVENT_NAMES.has(detail.eventName)) {
      return undefined
    }
    const { stageIds } = await state.get()
    if (!stageIds) return undefined
    const known = new Set(stageIds)
    return stringsIn(detail.requestParameters).some((value) => known.has(value))
      ? undefined
      : 'other-stage'
  }

  return middy<KeySyncEvent, KeySyncResult, Error, Context>()
    .use(deps.observability ?? [])
    .handler(async (event) => {
      if (isCustomResourceEvent(event)) return deploySync(event)
      if (isConfirmation(event)) {
        return sync('operator confirmation', { confirmedCount: event.confirmRemovals })
      }
      const trigger = event?.['detail-type'] ?? 'unknown'
      if (trigger === MANAGEMENT_EVENT) {
        const reason = await skipReasonOf(event)
        if (reason) {
          logger.info('Key sync skipped', { trigger, reason })
          return skipped(reason)
        }
      }
      return sync(trigger)
    })
}
