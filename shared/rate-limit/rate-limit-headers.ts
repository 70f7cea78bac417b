import {
  DAY_MS,
  MINUTE_MS,
  SECOND_MS,
  secondsUntil,
  unixSecondsCeil,
  type WindowState,
} from './rate-limit-windows.ts'

/**
 * Rate-limit response headers (docs/rate-limits-and-keys.md, "The headers"):
 * - `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds) describe the
 *   window with the fewest requests left; on a tie, the one that resets first; if that ties too,
 *   the minute (it is the one a client hits first when bursting).
 * - `RateLimit-Policy` and `RateLimit` describe both windows in the Structured Field List form of
 *   draft-ietf-httpapi-ratelimit-headers-11 (May 2026): policy items `"name";q=<quota>;w=<window
 *   seconds>` and service-limit items `"name";r=<remaining>;t=<seconds until reset>`.
 */
export const POLICY_NAMES = { minute: 'minute', day: 'day' } as const

/** Every rate-limit header an answer carries (the OpenAPI document declares these). */
export const RATE_LIMIT_HEADER_NAMES = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
] as const

type RateLimitHeaderName = (typeof RATE_LIMIT_HEADER_NAMES)[number]

export interface RateLimitHeaderInput {
  minute: WindowState
  day: WindowState
  nowMs: number
}

const whole = (value: number): number => Math.max(0, Math.floor(value))

/** The window a client should watch: fewest remaining, then earliest reset, then the minute. */
export const tightestWindow = ({ minute, day }: RateLimitHeaderInput): WindowState => {
  if (whole(day.remaining) !== whole(minute.remaining)) {
    return whole(day.remaining) < whole(minute.remaining) ? day : minute
  }
  return day.resetAtMs < minute.resetAtMs ? day : minute
}

export const rateLimitHeaders = (
  input: RateLimitHeaderInput,
): Record<RateLimitHeaderName, string> => {
  const { minute, day, nowMs } = input
  const tightest = tightestWindow(input)
  const policy = (name: string, state: WindowState, windowMs: number) =>
    `"${name}";q=${whole(state.limit)};w=${windowMs / SECOND_MS}`
  const limit = (name: string, state: WindowState) =>
    `"${name}";r=${whole(state.remaining)};t=${secondsUntil(state.resetAtMs, nowMs)}`
  return {
    'X-RateLimit-Limit': String(whole(tightest.limit)),
    'X-RateLimit-Remaining': String(whole(tightest.remaining)),
    'X-RateLimit-Reset': String(unixSecondsCeil(tightest.resetAtMs)),
    'RateLimit-Policy': `${policy(POLICY_NAMES.minute, minute, MINUTE_MS)}, ${policy(POLICY_NAMES.day, day, DAY_MS)}`,
    RateLimit: `${limit(POLICY_NAMES.minute, minute)}, ${limit(POLICY_NAMES.day, day)}`,
  }
}
