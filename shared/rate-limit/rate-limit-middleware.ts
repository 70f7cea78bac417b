import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { type KeyContext, readKeyContext } from '#shared/auth/key-context.ts'
import type { limiterAccessOf } from '#shared/config/routes-config.ts'
import { isDatastoreConfigurationError } from '#shared/errors/datastore-errors.ts'
import type { ErrorCode } from '#shared/errors/error-codes.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { errorResponse } from '#shared/http/http-response.ts'
import type { ApiMiddleware, ApiRequest } from '#shared/http/http-types.ts'
import { requestIdOf } from '#shared/http/request-id.ts'
import { addResponseHeaders } from '#shared/middleware/response-headers-middleware.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { rateLimitHeaders } from './rate-limit-headers.ts'
import {
  admittedOnStoreFailure,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitOutcome,
} from './rate-limiter.ts'

export interface RateLimitMiddlewareOptions {
  limiter: RateLimiter
  /** From the route table: writes wait for the decision, reads race it against the data access. */
  access: ReturnType<typeof limiterAccessOf>
  logger: AppLogger
  metrics?: Pick<Metrics, 'addMetric'>
  /** Only for the failure policy when the limiter itself throws. */
  clock?: Clock
}

const REJECTION_METRICS: Record<Exclude<RateLimitOutcome, 'admitted'>, string> = {
  rate_limited: 'RateLimited',
  quota_exceeded: 'QuotaExceeded',
  key_suspended: 'KeySuspended',
}

/** Transient store failures: the request was admitted (failure policy). Alarmed. */
export const STORE_FAILURE_METRIC = 'RateLimiterStoreFailures'
/** Configuration failures (missing table, access denied): the request got 503. Alarmed. */
export const CONFIG_FAILURE_METRIC = 'RateLimiterConfigFailures'

/** Keys remembered per instance (last known windows, known refusals); the oldest go first. */
const MAX_REMEMBERED_KEYS = 10_000

interface Decided extends RateLimitDecision {
  /** The store is misconfigured: answer 503 rather than admit without limits. */
  configFailure?: boolean
}

interface PendingDecision {
  decision: Promise<Decided>
  settled: boolean
}

interface KnownWindows {
  minute: RateLimitDecision['minute']
  day: RateLimitDecision['day']
}

const remember = <Value>(map: Map<string, Value>, key: string, value: Value): void => {
  map.delete(key)
  map.set(key, value)
  if (map.size > MAX_REMEMBERED_KEYS) map.delete(map.keys().next().value as string)
}

/** A window's remaining count never above what this instance last saw in the same window. */
const boundedBy = (
  window: RateLimitDecision['minute'],
  known: RateLimitDecision['minute'] | undefined,
) =>
  known && known.resetAtMs === window.resetAtMs
    ? { ...window, remaining: Math.min(window.remaining, known.remaining) }
    : window

/**
 * Until when a refusal is sure to stand: the end of its UTC minute (rate_limited), of its UTC day
 * (quota_exceeded) or of the suspension (whose windows both reset when it ends). Exact instants,
 * not Retry-After, which is rounded up to whole seconds.
 */
const refusalEndMs = (decision: RateLimitDecision): number =>
  decision.outcome === 'quota_exceeded' ? decision.day.resetAtMs : decision.minute.resetAtMs

const rejectionOf = (decision: Decided): HttpError | undefined => {
  if (decision.configFailure) {
    return new HttpError('service_unavailable', { headers: retryAfterHeaders(1) })
  }
  if (decision.outcome === 'admitted') return undefined
  const code: ErrorCode = decision.outcome
  return new HttpError(code, { headers: retryAfterHeaders(decision.retryAfterSeconds ?? 1) })
}

/**
 * Plan rate limits for one operation, keyed by the authorizer's key id with the limits the
 * authorizer resolved. A write waits for the decision before anything runs, so a rejected
 * request never creates anything; a read starts the decision and lets the handler read
 * meanwhile, then answers 429 instead of the result if the request was over its limit. Every
 * response to a keyed request (2xx, 4xx, 429, 5xx) carries the rate-limit headers. The decision
 * promise never rejects (store failures follow the failure policy), so an early error can never
 * leave an unhandled rejection behind.
 */
export const rateLimitMiddleware = ({
  limiter,
  access,
  logger,
  metrics,
  clock = systemClock,
}: RateLimitMiddlewareOptions): ApiMiddleware<never> => {
  const pending = new WeakMap<object, PendingDecision>()
  /** The windows of each key's last decision the store made: the headers' ceiling on failure. */
  const lastKnown = new Map<string, KnownWindows>()
  /** Until when each key is known to be refused (epoch ms): such a read waits for its decision. */
  const refusedUntil = new Map<string, number>()

  const decide = async (key: KeyContext): Promise<Decided> => {
    let decision: Decided
    try {
      decision = await limiter.consume(key.keyId, key.limits)
    } catch (error) {
      decision = admittedOnStoreFailure(key.limits, clock(), error)
    }
    if (decision.storeError === undefined) {
      remember(lastKnown, key.keyId, { minute: decision.minute, day: decision.day })
    } else {
      const known = lastKnown.get(key.keyId)
      decision = {
        ...decision,
        minute: boundedBy(decision.minute, known?.minute),
        day: boundedBy(decision.day, known?.day),
      }
      if (isDatastoreConfigurationError(decision.storeError)) {
        // No retry cures a missing table or a missing permission, and admitting would leave the
        // key unlimited until someone notices: refuse with 503 and alarm.
        logger.error('Rate limiter store is misconfigured; answering 503', {
          error: withOriginalStack(decision.storeError),
          keyId: key.keyId,
        })
        metrics?.addMetric(CONFIG_FAILURE_METRIC, MetricUnit.Count, 1)
        return { ...decision, configFailure: true }
      }
      // Throttling, timeouts, 5xx and anything else: admit (the usage plan still backs the
      // limits), log and alarm. An unknown error is treated as transient so a bug in the
      // limiter's own store never takes the whole API down.
      logger.warn('Rate limiter store failed; applying the failure policy', {
        error: withOriginalStack(decision.storeError),
        keyId: key.keyId,
        outcome: decision.outcome,
      })
      metrics?.addMetric(STORE_FAILURE_METRIC, MetricUnit.Count, 1)
    }
    if (decision.outcome !== 'admitted') {
      metrics?.addMetric(REJECTION_METRICS[decision.outcome], MetricUnit.Count, 1)
      remember(refusedUntil, key.keyId, refusalEndMs(decision))
    }
    return decision
  }

  /** Applies the decision once: its headers on the response; the 429 if it was a rejection. */
  const settle = async (request: ApiRequest<never>): Promise<HttpError | undefined> => {
    const state = pending.get(request)
    if (!state || state.settled) return undefined
    state.settled = true
    const decision = await state.decision
    addResponseHeaders(request, rateLimitHeaders(decision))
    return rejectionOf(decision)
  }

  return {
    before: async (request) => {
      // No key context: the authorizer did not pass the request, so there is no key to count.
      const key = readKeyContext(request.event)
      if (!key) return
      pending.set(request, { decision: decide(key), settled: false })
      // Writes wait for the decision so a refused create writes nothing; so does a read by a key
      // this instance knows to be refused right now, so it costs no pet-table read. (Its
      // refusal is still counted by the limiter: enough of them suspend the key.)
      const knownRefused = (refusedUntil.get(key.keyId) ?? 0) > clock()
      if (access === 'write' || knownRefused) {
        const rejection = await settle(request)
        if (rejection) throw rejection
      }
    },
    after: async (request) => {
      const rejection = await settle(request)
      if (rejection) throw rejection
    },
    onError: async (request) => {
      // The handler (or a request middleware) failed before the decision was applied: a
      // rejected request still gets its 429, whatever the handler's outcome would have been.
      const rejection = await settle(request)
      if (!rejection) return
      request.response = errorResponse(rejection, requestIdOf(request))
    },
  }
}
