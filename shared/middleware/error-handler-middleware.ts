import { isDatastoreUnavailable } from '#shared/errors/datastore-errors.ts'
import { HttpError, isHttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import { errorResponse } from '#shared/http/http-response.ts'
import type { ApiMiddleware } from '#shared/http/http-types.ts'
import { requestIdOf } from '#shared/http/request-id.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'

/**
 * The one error path: HttpErrors render as the Error body; datastore outages become 503 with
 * Retry-After; anything else is logged with the request id and answered as a generic 500 that
 * leaks no internals.
 */
export const errorHandlerMiddleware = ({
  logger,
}: {
  logger: AppLogger
}): ApiMiddleware<never> => ({
  onError: (request) => {
    if (request.response !== undefined) return
    const { error } = request
    const requestId = requestIdOf(request)
    let httpError: HttpError
    if (isHttpError(error)) {
      httpError = error
    } else if (isDatastoreUnavailable(error)) {
      logger.warn('Datastore unavailable', { error: withOriginalStack(error), requestId })
      httpError = new HttpError('service_unavailable', { headers: retryAfterHeaders(1) })
    } else {
      logger.error('Unhandled error', { error: withOriginalStack(error), requestId })
      httpError = new HttpError('internal_error')
    }
    request.response = errorResponse(httpError, requestId)
  },
})
