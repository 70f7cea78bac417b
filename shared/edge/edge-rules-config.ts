import { MAX_AUTHORIZATION_LENGTH } from '#shared/auth/bearer-token.ts'
import { limitsFor, PLAN_NAMES, type PlanLimits } from '#shared/config/plans-config.ts'
import type { ErrorCode } from '#shared/errors/error-codes.ts'

/**
 * The edge (docs/operations.md, "Edge rules"): what the stage's WAF web ACL counts and refuses per
 * address and per key, in priority order, with what numbers, and what it answers. One definition:
 * the CDK renders each rule as a WAF statement (infra/constructs/web-acl-construct.ts) and the
 * local gateway enforces the same rules with the same numbers (local/edge/local-edge.ts); a
 * test holds the local edge's verdicts to the synthesized web ACL's.
 */

/** The header the API key travels in (`Authorization: Bearer <key>`), as WAF names it. */
export const KEY_HEADER = 'authorization'
/** How a header that carries a key starts, in lower case. */
export const KEY_SCHEME = 'bearer '
/** The shortest header that can carry a key: `Bearer ` and a 20-character key. */
export const MIN_KEYED_HEADER_LENGTH = KEY_SCHEME.length + 20
/** The longest: the bearer grammar's (shared/auth/bearer-token.ts). */
export const MAX_KEYED_HEADER_LENGTH = MAX_AUTHORIZATION_LENGTH
/** A CORS preflight's method (and every other OPTIONS request's). */
export const PREFLIGHT_METHOD = 'OPTIONS'

/**
 * Whether a request's Authorization header looks like it carries a key: it starts with `bearer `
 * (any case) and is as long as a bearer header with a key can be. Coarser than the gateway's
 * token validation pattern (WAF's regex has no capturing groups); what passes this but not the
 * pattern is answered 401 by the gateway without invoking anything.
 */
export const carriesKey = (authorization: string | undefined): boolean =>
  authorization !== undefined &&
  authorization.length >= MIN_KEYED_HEADER_LENGTH &&
  authorization.length <= MAX_KEYED_HEADER_LENGTH &&
  authorization.toLowerCase().startsWith(KEY_SCHEME)

/**
 * How the per-key rule reads the header before counting it, in order (WAF's LOWERCASE, then
 * COMPRESS_WHITE_SPACE, "Text transformations", AWS WAF Developer Guide): the 1,024 spellings the
 * gateway accepts of one key's header (the case of `Bearer`, 1 to 16 spaces) are one counter.
 */
export const KEY_HEADER_TRANSFORMATIONS = ['LOWERCASE', 'COMPRESS_WHITE_SPACE'] as const

/** The per-key counter's instance of a header, transformed as KEY_HEADER_TRANSFORMATIONS say. */
export const keyCounterOf = (authorization: string): string =>
  authorization
    .toLowerCase()
    .replace(/[\f\t\n\r\v\u00a0]/g, ' ')
    .replace(/ {2,}/g, ' ')

/** The edge's numbers for one stage (the CDK reads them from context, the local edge uses staging's). */
export interface EdgeNumbers {
  /** Requests without a key one address may send in 5 minutes (preflights not counted). */
  wafKeylessPer5Minutes: number
  /**
   * Requests with a key (any keys, right or wrong) one address may send in a minute; its
   * preflights (OPTIONS) are counted apart, at the same ceiling.
   */
  wafKeyedPerAddressPerMinute: number
  /** The largest per-minute limit a plan may have: the per-key rule sits at twice it. */
  largestPlanPerMinute: number
  /** Unauthorized answers (401) one address may get in a minute before it is blocked as a whole. */
  wafAutoBlockUnauthorizedPerMinute: number
  /** How long an automatic block lasts. */
  wafAutoBlockMinutes: number
}

/** WAF's bounds on a rate-based rule's limit per window ("Rate-based rule statement", AWS WAF docs). */
export const WAF_LIMIT_RANGE = { min: 10, max: 2_000_000_000 } as const

/**
 * The share of one method's stage throttle one address may take with keyed requests (and, apart,
 * with preflights). Below 1, so a host sending as fast as it can leaves the other half of every
 * method's bucket to the other clients; WAF looks back over the last minute about every 10
 * seconds (RateBasedStatement.EvaluationWindowSec, AWS WAFV2 API Reference).
 */
export const KEYED_ADDRESS_SHARE = 0.5

/**
 * How far the per-address ceiling sits above the largest plan: a plan's fixed UTC minute lets a
 * client send its whole minute at the end of one minute and again at the start of the next (2x
 * in WAF's sliding 60 s), and refused requests and retries count at the edge too (the third).
 */
export const KEYED_ADDRESS_PLAN_MARGIN = 3

/** The per-address keyed ceiling a stage throttle allows (requests a minute). */
export const keyedPerAddressCeiling = (throttleRateLimit: number): number =>
  Math.floor(throttleRateLimit * 60 * KEYED_ADDRESS_SHARE)

/**
 * Requests without a well-formed key one address may send per 5 minutes: every one of them is
 * answered 401 without invoking anything, so this only caps what a flood costs in WAF
 * inspections and log lines; a client that forgot its key is told by its first 401.
 */
export const WAF_KEYLESS_DEFAULT = 1_500

/**
 * How long an automatic block lasts by default: long enough that an attacker who waits it out
 * and floods again spends most of its time blocked (a minute or so of flood before each block,
 * then an hour refused), short enough that a shared address blocked by one abuser is back within
 * the hour. An operator lifts one sooner (docs/operations.md, "Support runbook").
 */
export const WAF_AUTO_BLOCK_MINUTES_DEFAULT = 60

/** The stage's own largest plan (per minute): the Enterprise plan unless configured below Business. */
export const largestStagePlanPerMinute = (enterpriseLimits: PlanLimits): number =>
  Math.max(...PLAN_NAMES.map((plan) => limitsFor(plan, enterpriseLimits).perMinute))

/**
 * The WAF per-key rule's limit: twice what a key of the largest plan may send in WAF's 5-minute
 * window. A key sending more than twice its per-minute limit in a minute is suspended by the
 * functions' limiter anyway (docs/rate-limits-and-keys.md), so the edge only drops what would be
 * refused.
 */
export const wafPerKeyLimit = (largestPlanPerMinute: number): number => 2 * 5 * largestPlanPerMinute

/**
 * A stage's edge numbers where nothing is configured: the keyed ceiling is half a minute of the
 * stage throttle, the largest plan the tools accept the smaller of ten times the stage's own and
 * a third of that ceiling, and the automatic block's rate that largest plan: one key of the
 * largest plan, all of it refused, is the most unauthorized traffic a customer's client makes
 * (a revoked or mistyped key sent at its plan's rate); more comes only from someone trying keys.
 */
export const defaultEdgeNumbers = (
  throttleRateLimit: number,
  enterpriseLimits: PlanLimits,
): EdgeNumbers => {
  const ownLargest = largestStagePlanPerMinute(enterpriseLimits)
  const ceiling = keyedPerAddressCeiling(throttleRateLimit)
  const largestPlanPerMinute = Math.max(
    ownLargest,
    Math.min(10 * ownLargest, Math.floor(ceiling / KEYED_ADDRESS_PLAN_MARGIN)),
  )
  return {
    wafKeylessPer5Minutes: WAF_KEYLESS_DEFAULT,
    wafKeyedPerAddressPerMinute: ceiling,
    largestPlanPerMinute,
    wafAutoBlockUnauthorizedPerMinute: largestPlanPerMinute,
    wafAutoBlockMinutes: WAF_AUTO_BLOCK_MINUTES_DEFAULT,
  }
}

/** An edge answer: always 429 in the API's Error shape, with a static Retry-After (WAF's are static). */
export interface EdgeAnswer {
  code: ErrorCode
  message?: string
  retryAfterSeconds: (numbers: EdgeNumbers) => number
}

/** The edge's answers, by the key the web ACL's custom response bodies use. */
export const EDGE_ANSWERS = {
  addressBlocked: {
    code: 'rate_limited',
    message: 'Requests from this address are refused for a while; retry later.',
    retryAfterSeconds: () => 300,
  },
  addressBlockedAutomatically: {
    code: 'rate_limited',
    message:
      'Requests from this address are refused for a while after too many unauthorized requests; retry later.',
    retryAfterSeconds: (numbers) => numbers.wafAutoBlockMinutes * 60,
  },
  tooManyFailedAuths: { code: 'too_many_failed_auths', retryAfterSeconds: () => 60 },
  preflightsRateLimited: {
    code: 'rate_limited',
    message: 'Too many preflight (OPTIONS) requests from this address; retry later.',
    retryAfterSeconds: () => 60,
  },
  addressRateLimited: {
    code: 'rate_limited',
    message: 'Too many requests with keys from this address; retry later.',
    retryAfterSeconds: () => 60,
  },
  rateLimited: {
    code: 'rate_limited',
    message: 'Too many requests with this key; retry later.',
    retryAfterSeconds: () => 60,
  },
} as const satisfies Record<string, EdgeAnswer>

export type EdgeAnswerName = keyof typeof EDGE_ANSWERS

/**
 * Which requests a rule counts (and refuses): each condition set must hold; an unset one does not
 * matter. `exempt: false` leaves out the stage's known egress addresses (`wafExemptAddresses`).
 */
export interface EdgeScope {
  preflight?: boolean
  carriesKey?: boolean
  exempt?: false
}

/** An address list the rule refuses outright: the operator's, or the automatic block's. */
export interface EdgeBlockRule {
  name: string
  type: 'block'
  list: 'operator' | 'automatic'
  scope: EdgeScope
  answer: EdgeAnswerName
}

/** A rate-based rule: counts what its scope matches per instance over a trailing window. */
export interface EdgeRateRule {
  name: string
  type: 'rate'
  /** The instance a request is counted in: its source address, or its key header (transformed). */
  per: 'address' | 'key'
  /** 60 or 300 (WAF allows 60, 120, 300 and 600). */
  windowSeconds: 60 | 300
  limit: (numbers: EdgeNumbers) => number
  scope: EdgeScope
  answer: EdgeAnswerName
}

export type EdgeRule = EdgeBlockRule | EdgeRateRule

/**
 * The address and key rules, in WAF's priority order (the first that blocks decides; a rule after
 * it neither counts nor sees the request):
 * - `BlockedAddresses`: the operator's block list, every request.
 * - `AutoBlockedAddresses`: the automatic block list (docs/operations.md, "Automatic block"),
 *   every request, valid keys too; never an exempted address.
 * - `KeylessPerAddress`: requests without a key, preflights left out.
 * - `PreflightPerAddress`: preflights (every OPTIONS), at the keyed ceiling: a browser sends about
 *   one per distinct URL, so its preflights track its keyed requests; counted apart from them,
 *   so neither can refuse the other.
 * - `KeyedPerAddress`: requests with a key, any keys, at half a minute of the stage throttle.
 * - `RatePerKey`: requests with a key, per key header value, at twice the largest plan.
 */
export const EDGE_RULES: readonly EdgeRule[] = [
  {
    name: 'BlockedAddresses',
    type: 'block',
    list: 'operator',
    scope: {},
    answer: 'addressBlocked',
  },
  {
    name: 'AutoBlockedAddresses',
    type: 'block',
    list: 'automatic',
    scope: { exempt: false },
    answer: 'addressBlockedAutomatically',
  },
  {
    name: 'KeylessPerAddress',
    type: 'rate',
    per: 'address',
    windowSeconds: 300,
    limit: (numbers) => numbers.wafKeylessPer5Minutes,
    scope: { carriesKey: false, preflight: false },
    answer: 'tooManyFailedAuths',
  },
  {
    name: 'PreflightPerAddress',
    type: 'rate',
    per: 'address',
    windowSeconds: 60,
    limit: (numbers) => numbers.wafKeyedPerAddressPerMinute,
    scope: { preflight: true, exempt: false },
    answer: 'preflightsRateLimited',
  },
  {
    name: 'KeyedPerAddress',
    type: 'rate',
    per: 'address',
    windowSeconds: 60,
    limit: (numbers) => numbers.wafKeyedPerAddressPerMinute,
    scope: { carriesKey: true, exempt: false },
    answer: 'addressRateLimited',
  },
  {
    name: 'RatePerKey',
    type: 'rate',
    per: 'key',
    windowSeconds: 300,
    limit: (numbers) => wafPerKeyLimit(numbers.largestPlanPerMinute),
    scope: { carriesKey: true },
    answer: 'rateLimited',
  },
]

/** What a scope needs to know of a request. */
export interface EdgeRequestFacts {
  method: string
  authorization: string | undefined
  exempt: boolean
}

/** Whether a rule's scope matches a request (the local edge; WAF evaluates the rendered statements). */
export const inScope = (scope: EdgeScope, request: EdgeRequestFacts): boolean =>
  (scope.preflight === undefined || scope.preflight === (request.method === PREFLIGHT_METHOD)) &&
  (scope.carriesKey === undefined || scope.carriesKey === carriesKey(request.authorization)) &&
  (scope.exempt === undefined || !request.exempt)
