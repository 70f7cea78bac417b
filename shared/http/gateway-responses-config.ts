import { BEARER_CHALLENGE } from '#shared/auth/bearer-token.ts'
import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'

/**
 * API Gateway's own answers (the requests that never reach a function), rewritten to the Error
 * body of docs/api.md: `{code, message, status, requestId}` as JSON, `status` equal to the HTTP
 * status. Keyed by API Gateway response type.
 */
export interface GatewayResponseSpec {
  /** An API Gateway response type, e.g. UNAUTHORIZED. */
  type: string
  code: ErrorCode
  headers?: Record<string, string>
}

const UNAUTHORIZED_HEADERS = { 'WWW-Authenticate': BEARER_CHALLENGE }

/**
 * The gateway cannot compute how long a window has left, so these are fixed hints. The
 * function-level limiter (same plan limits, checked first) answers 429s with the exact
 * Retry-After; these only appear when the usage-plan backstop trips.
 * - THROTTLED: the usage-plan token bucket (usagePlanBackstop) holds two minutes of requests and
 *   refills one minute's worth every 30 s, so an emptied bucket is full again after 60 s, by
 *   which time the API's own UTC-minute window has also reset. A minute always suffices (the stage
 *   throttle is at least as deep as any plan's bucket).
 * - QUOTA_EXCEEDED: the DAY quota (three days' requests) resets at 00:00 UTC; an exact value
 *   would need the time of day. A client meets it only after sending three times its daily limit
 *   in one UTC day (the functions' 429s count too); an hour keeps it from hammering a spent quota
 *   without making it wait a full day.
 */
export const THROTTLED_RETRY_AFTER_SECONDS = 60
export const QUOTA_EXCEEDED_RETRY_AFTER_SECONDS = 3600

export const GATEWAY_RESPONSES: readonly GatewayResponseSpec[] = [
  // Missing header (UNAUTHORIZED), authorizer denial (ACCESS_DENIED), and a key that API
  // Gateway itself rejects after the authorizer (INVALID_API_KEY): one 401, never telling which.
  { type: 'UNAUTHORIZED', code: 'unauthorized', headers: UNAUTHORIZED_HEADERS },
  { type: 'ACCESS_DENIED', code: 'unauthorized', headers: UNAUTHORIZED_HEADERS },
  { type: 'INVALID_API_KEY', code: 'unauthorized', headers: UNAUTHORIZED_HEADERS },
  // No such resource or method: API Gateway says 403 "Missing Authentication Token".
  { type: 'MISSING_AUTHENTICATION_TOKEN', code: 'route_not_found' },
  { type: 'RESOURCE_NOT_FOUND', code: 'route_not_found' },
  {
    type: 'THROTTLED',
    code: 'rate_limited',
    headers: { 'Retry-After': String(THROTTLED_RETRY_AFTER_SECONDS) },
  },
  {
    type: 'QUOTA_EXCEEDED',
    code: 'quota_exceeded',
    headers: { 'Retry-After': String(QUOTA_EXCEEDED_RETRY_AFTER_SECONDS) },
  },
  { type: 'BAD_REQUEST_BODY', code: 'validation_failed' },
  { type: 'BAD_REQUEST_PARAMETERS', code: 'validation_failed' },
  { type: 'REQUEST_TOO_LARGE', code: 'payload_too_large' },
  { type: 'UNSUPPORTED_MEDIA_TYPE', code: 'unsupported_media_type' },
  // Fallbacks for every other type. Their status is pinned (API Gateway applies a default's
  // status to every type not customized above) so that the body's `status` always equals the
  // HTTP status: a 502 from a crashed function becomes 500 internal_error, as docs/api.md says
  // for anything unexpected, and the 403s of auth schemes this API does not use become 400.
  { type: 'DEFAULT_4XX', code: 'validation_failed' },
  { type: 'DEFAULT_5XX', code: 'internal_error' },
]

/** The mapping template: JSON with the request id API Gateway also sends as x-amzn-RequestId. */
export const gatewayResponseBody = (code: ErrorCode): string => {
  const message = ERROR_MESSAGES[code]
  // The template is Velocity: `$` and `#` in a message would be evaluated, not printed.
  if (/[$#]/.test(message)) throw new Error(`Message of ${code} cannot be used in a VTL template`)
  return JSON.stringify({
    code,
    message,
    status: ERROR_STATUS[code],
    requestId: '$context.requestId',
  })
}

/** Static header values as API Gateway wants them: in single quotes. */
export const gatewayHeaderValue = (value: string): string => {
  if (value.includes("'")) throw new Error(`Header value ${value} cannot contain a single quote`)
  return `'${value}'`
}
