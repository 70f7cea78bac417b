import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { type KeyContext, readKeyContext } from '#shared/auth/key-context.ts'
import type { RouteDefinition } from '#shared/config/routes-config.ts'
import type { ErrorCode } from '#shared/errors/error-codes.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { errorResponse } from '#shared/http/http-response.ts'
import type { ApiMiddleware, ApiRequest } from '#shared/middleware/http-types.ts'
import { requestIdOf } from '#shared/middleware/request-id.ts'
import { addResponseHeaders } from '#shared/middleware/response-headers-middleware.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
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
  access: RouteDefinition['access']
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

export const STORE_FAILURE_METRIC = 'RateLimiterStoreFailures'

interface PendingDecision {
  decision: Promise<RateLimitDecision>
  settled: boolean
}

const rejectionOf = (decision: RateLimitDecision): HttpError | undefined => {
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

  const decide = async (key: KeyContext): Promise<RateLimitDecision> => {
    let decision: RateLimitDecision
    try {
      decision = await limiter.consume(key.keyId, key.limits)
    } catch (error) {
      decision = admittedOnStoreFailure(key.limits, clock(), error)
    }
    if (decision.storeError !== undefined) {
      logger.warn('Rate limiter store failed; applying the failure policy', {
        error: decision.storeError,
        keyId: key.keyId,
        outcome: decision.outcome,
      })
      metrics?.addMetric(STORE_FAILURE_METRIC, MetricUnit.Count, 1)
    }
    if (decision.outcome !== 'admitted') {
      metrics?.addMetric(REJECTION_METRICS[decision.outcome], MetricUnit.Count, 1)
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
      if (access === 'write') {
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
