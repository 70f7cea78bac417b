import type { Logger } from '@aws-lambda-powertools/logger'
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware'
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { MiddlewareObj, Request } from '@middy/core'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { readKeyContext } from '#shared/auth/key-context.ts'
import type { ApiMiddleware, ApiRequest, AuthorizerMiddleware } from '#shared/http/http-types.ts'
import { requestIdOf } from '#shared/http/request-id.ts'
import { logger as sharedLogger } from './logger.ts'
import {
  AUTHORIZER_METRICS,
  AUTHORIZER_OPERATION,
  createMetrics,
  HTTP_METRICS,
  OPERATION_DIMENSION,
  perVersionPublisher,
} from './metrics.ts'

export interface ObservabilityOptions {
  logger?: Logger
  metrics?: Metrics
}

type AnyMiddleware = MiddlewareObj<never, never, Error, Context>

/**
 * Logger context and metrics shared by the HTTP functions and the authorizer. Tracing is Lambda's
 * own (active tracing: a segment per invocation, linked to API Gateway's): no X-Ray SDK in the
 * bundles, which cost a sixth of each bundle and a fifth of each cold start (npm run bench). The event
 * is never logged (logEvent: false, whatever POWERTOOLS_LOGGER_LOG_EVENT says): it would carry the
 * API key (Authorization header).
 * Per-request log keys are reset after each invocation so a key id never leaks into the next one.
 * Every function uses these (the key-sync function too: its events carry CloudTrail details).
 */
export const baseMiddlewares = <TEvent = never, TResult = never>(
  logger: Logger,
  metrics: Metrics,
): MiddlewareObj<TEvent, TResult, Error, Context>[] =>
  [
    injectLambdaContext(logger, { logEvent: false, resetKeys: true }),
    logMetrics(metrics, { captureColdStartMetric: true }),
  ] as AnyMiddleware[] as MiddlewareObj<TEvent, TResult, Error, Context>[]

/** Adds the operation, the caller's key id and plan (never the key) and the API request id. */
const requestContextMiddleware = (operation: string, logger: Logger): ApiMiddleware<never> => ({
  before: (request) => {
    const caller = readKeyContext(request.event)
    logger.appendKeys({
      [OPERATION_DIMENSION]: operation,
      ...(caller ? { keyId: caller.keyId, plan: caller.plan } : {}),
    })
    // Same id as `requestId` in error bodies and API Gateway's x-amzn-RequestId header.
    const requestId = requestIdOf(request)
    if (requestId) logger.setCorrelationId(requestId)
  },
})

/**
 * Counts every final response by class: error responses made by the error handler included. The
 * 5xx count is also published per function version: a handled failure is a 500 response, which
 * Lambda does not count in `Errors`, so this is what a rollout of the function watches.
 */
const httpMetricsMiddleware = (metrics: Metrics): ApiMiddleware<never> => {
  const publishPerVersion = perVersionPublisher(metrics)
  const count = (request: ApiRequest<never>): void => {
    // No response after onError means the error escaped every handler: Lambda reports a 5xx.
    const status = request.response?.statusCode ?? 500
    const serverError = status >= 500 ? 1 : 0
    metrics.addMetric(
      HTTP_METRICS.clientErrors,
      MetricUnit.Count,
      status >= 400 && status < 500 ? 1 : 0,
    )
    metrics.addMetric(HTTP_METRICS.serverErrors, MetricUnit.Count, serverError)
    metrics.addMetric(HTTP_METRICS.throttled, MetricUnit.Count, status === 429 ? 1 : 0)
    publishPerVersion(HTTP_METRICS.serverErrors, serverError)
  }
  return { after: count, onError: count }
}

/**
 * The HTTP pipeline's `observability` slot. httpPipeline registers these first, so middy runs
 * their after/onError last: they see the final response, including error responses rendered by
 * the error handler and headers added on the way out. Within the list, the metrics counter comes
 * after logMetrics so it counts before logMetrics publishes, and the logger comes first so its
 * keys are reset only after everything else has logged.
 */
export const observabilityMiddlewares = (
  operationId: string,
  options: ObservabilityOptions = {},
): ApiMiddleware<never>[] => {
  const logger = options.logger ?? sharedLogger
  const metrics = options.metrics ?? createMetrics(operationId)
  return [
    ...(baseMiddlewares(logger, metrics) as ApiMiddleware<never>[]),
    requestContextMiddleware(operationId, logger),
    httpMetricsMiddleware(metrics),
  ]
}

type AuthorizerRequest = Request<
  APIGatewayTokenAuthorizerEvent,
  APIGatewayAuthorizerResult,
  Error,
  Context
>

/**
 * Counts authorizer outcomes: allowed, denied (Unauthorized) and failed (API Gateway 500). Only a
 * failure to decide is published per version for rollouts: every denial is a thrown
 * "Unauthorized" that Lambda counts in `Errors`, so `Errors` cannot tell a bad key from a bad
 * release.
 */
const authorizerMetricsMiddleware = (metrics: Metrics): AuthorizerMiddleware => {
  const publishPerVersion = perVersionPublisher(metrics)
  const count = (outcome: keyof typeof AUTHORIZER_METRICS): void => {
    for (const [name, metric] of Object.entries(AUTHORIZER_METRICS)) {
      metrics.addMetric(metric, MetricUnit.Count, name === outcome ? 1 : 0)
    }
    publishPerVersion(AUTHORIZER_METRICS.failed, outcome === 'failed' ? 1 : 0)
  }
  return {
    after: () => count('allowed'),
    onError: (request: AuthorizerRequest) =>
      count(request.error?.message === UNAUTHORIZED ? 'denied' : 'failed'),
  }
}

/** The authorizer's middlewares: logger context and metrics. */
export const authorizerObservabilityMiddlewares = (
  options: ObservabilityOptions = {},
): AuthorizerMiddleware[] => {
  const logger = options.logger ?? sharedLogger
  const metrics = options.metrics ?? createMetrics(AUTHORIZER_OPERATION)
  return [
    ...(baseMiddlewares(logger, metrics) as AuthorizerMiddleware[]),
    {
      before: () => {
        logger.appendKeys({ [OPERATION_DIMENSION]: AUTHORIZER_OPERATION })
      },
    },
    authorizerMetricsMiddleware(metrics),
  ]
}
