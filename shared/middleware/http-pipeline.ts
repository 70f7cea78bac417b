import middy from '@middy/core'
import type { Context } from 'aws-lambda'
import { type OperationId, routeOf } from '#shared/config/routes-config.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import type { HttpResponse } from '#shared/http/http-response.ts'
import type { ApiEvent, ApiMiddleware } from '#shared/http/http-types.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { deprecationMiddleware } from './deprecation-middleware.ts'
import { errorHandlerMiddleware } from './error-handler-middleware.ts'
import { responseHeadersMiddleware } from './response-headers-middleware.ts'

/** How long before the Lambda timeout a handler gives up (time to render and return a 503). */
export const DEADLINE_MARGIN_MS = 500

export interface HttpPipelineOptions {
  logger: AppLogger
  /** Observability (logger context, metrics, tracing): outermost, sees every outcome. */
  observability?: ApiMiddleware<never>[]
  /** Rate limiting: runs before the request middlewares, adds its headers to every response. */
  rateLimit?: ApiMiddleware<never>
  /** Headers on every answer: the stage's CORS headers (shared/http/cors-headers.ts). */
  responseHeaders?: Record<string, string>
}

/**
 * The middleware chain every operation shares. Order matters: middy runs `onError` in reverse
 * order of registration, so the error handler (registered last here) renders the error first,
 * then the rate limiter and the response-header merge decorate whatever response was made.
 * Each function adds its own request middlewares (body parsing, validation) and its handler.
 */
export const httpPipeline = <TInput>(options: HttpPipelineOptions) => {
  const pipeline = middy<ApiEvent<TInput>, HttpResponse, Error, Context>({
    // The invocation's deadline: a handler still waiting on DynamoDB this close to the Lambda
    // timeout answers 503 (through the error middleware) instead of being killed into a 5xx
    // from API Gateway. Writes already sent may still land; Idempotency-Key makes retries safe.
    timeoutEarlyInMillis: DEADLINE_MARGIN_MS,
    timeoutEarlyResponse: () => {
      throw new HttpError('service_unavailable', { headers: retryAfterHeaders(1) })
    },
  })
  for (const middleware of options.observability ?? []) pipeline.use(middleware)
  pipeline.use(responseHeadersMiddleware(options.responseHeaders))
  if (options.rateLimit) pipeline.use(options.rateLimit)
  pipeline.use(errorHandlerMiddleware({ logger: options.logger }))
  return pipeline
}

/**
 * An operation's pipeline: the shared one, and what its route entry says of every answer. A
 * route with `deprecation` (shared/config/routes-config.ts) marks each answer deprecated and
 * answers 410 from its sunset: the entry is the one place that says so, never a handler.
 */
export const operationPipeline = <TInput>(
  operationId: OperationId,
  options: HttpPipelineOptions & { clock?: Clock },
) => {
  const pipeline = httpPipeline<TInput>(options)
  const route = routeOf(operationId)
  if ('deprecation' in route) {
    pipeline.use(deprecationMiddleware(route.deprecation, options.clock ?? systemClock))
  }
  return pipeline
}
