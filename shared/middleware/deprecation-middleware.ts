import type { RouteDeprecation } from '#shared/config/routes-config.ts'
import { HttpError } from '#shared/errors/http-error.ts'
import { baseUrlOf } from '#shared/http/http-headers.ts'
import type { ApiMiddleware } from '#shared/http/http-types.ts'
import type { Clock } from '#shared/time/clock.ts'
import { addResponseHeaders } from './response-headers-middleware.ts'

/**
 * Marks every response of a deprecated operation (Deprecation, RFC 9745; Sunset, RFC 8594;
 * successor Link) and answers 410 gone from the sunset instant on.
 */
export const deprecationMiddleware = (
  deprecation: RouteDeprecation,
  clock: Clock,
): ApiMiddleware => {
  const deprecatedAt = Date.parse(deprecation.deprecatedAt)
  const sunsetAt = Date.parse(deprecation.sunsetAt)
  const sunset = new Date(sunsetAt).toUTCString()
  const mark: NonNullable<ApiMiddleware['onError']> = (request) => {
    addResponseHeaders(request, {
      Deprecation: `@${Math.floor(deprecatedAt / 1000)}`,
      Sunset: sunset,
      Link: `<${baseUrlOf(request.event)}${deprecation.successorPath}>; rel="successor-version"`,
    })
  }
  return {
    // On errors too: the rate limiter's 429 comes before this middleware's `before` runs.
    onError: mark,
    before: (request) => {
      mark(request)
      if (clock() >= sunsetAt) {
        throw new HttpError('gone', {
          message: `This operation was removed on ${sunset}; use GET ${deprecation.successorPath} instead.`,
        })
      }
    },
  }
}
