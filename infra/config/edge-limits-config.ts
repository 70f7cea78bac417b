import { limitsFor, PLAN_NAMES, type PlanLimits } from '#shared/config/plans-config.ts'
import type { StageContext } from './stage-context-reader.ts'

/** The WAF's numbers for one stage (docs/operations.md, "Edge rules"). */
export interface EdgeLimits {
  /**
   * Requests without a well-formed key one source address may send in WAF's 5-minute window
   * before such requests from it are blocked (requests with a key and preflights are never
   * counted by it).
   */
  wafKeylessPer5Minutes: number
  /**
   * Requests with a key one source address may send in a minute, whichever keys and whether
   * they are right: at most half of one method's stage throttle, so no single host can hold a
   * method's token bucket, and at least three times the largest plan, so a customer behind a
   * shared address (NAT, proxy) is never cut below it.
   */
  wafKeyedPerAddressPerMinute: number
  /** IPv4 CIDRs (a known egress of a large customer) that the per-address keyed rule skips. */
  wafExemptAddresses: string[]
  /**
   * The largest per-minute limit a plan may have on this stage: the keys CLI refuses a
   * per-customer plan above it (it reads the API stack's LargestPlanPerMinute output), and the
   * WAF's per-key and per-address rules sit well above it, so no edge rule undercuts a plan the
   * tools accept.
   */
  largestPlanPerMinute: number
}

const largestStagePlanPerMinute = (enterpriseLimits: PlanLimits): number =>
  Math.max(...PLAN_NAMES.map((plan) => limitsFor(plan, enterpriseLimits).perMinute))

/** WAF's bounds on a rate-based rule's limit per window ("Rate-based rule statement", AWS WAF docs). */
export const WAF_LIMIT_RANGE = { min: 10, max: 2_000_000_000 } as const

/**
 * The WAF per-key rule's limit: twice what a key of the largest plan may send in WAF's 5-minute
 * window. A key sending more than twice its per-minute limit in a minute is suspended by the
 * functions' limiter anyway (docs/rate-limits-and-keys.md), so the edge only drops what would be
 * refused.
 */
export const wafPerKeyLimit = (largestPlanPerMinute: number): number => 2 * 5 * largestPlanPerMinute

/**
 * The share of one method's stage throttle one address may take with keyed requests. Below 1,
 * so a host sending as fast as it can leaves the other half of every method's bucket to the
 * other clients; WAF looks back over the last minute about every 10 seconds
 * (RateBasedStatement.EvaluationWindowSec, AWS WAFV2 API Reference).
 */
export const KEYED_ADDRESS_SHARE = 0.5

/**
 * The stage throttle a WAF's keyed ceiling needs for the stage's own largest plan (requests a
 * second): the ceiling is KEYED_ADDRESS_SHARE of a minute of it, and must hold that plan
 * KEYED_ADDRESS_PLAN_MARGIN times.
 */
export const edgeThrottleFloor = (enterpriseLimits: PlanLimits): number =>
  Math.ceil(
    (largestStagePlanPerMinute(enterpriseLimits) * KEYED_ADDRESS_PLAN_MARGIN) /
      (60 * KEYED_ADDRESS_SHARE),
  )

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

/** An IPv4 address or CIDR block, as an AWS WAF IP set takes it. */
const IPV4_CIDR =
  /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}(\/(3[0-2]|[12]?\d))?$/

/** `wafExemptAddresses`: comma-separated IPv4 addresses or CIDR blocks (a bare address is /32). */
export const exemptAddressesOf = (settings: StageContext): string[] => {
  const text = settings.text('wafExemptAddresses')
  if (text === undefined) return []
  const addresses = text.split(',').map((part) => part.trim())
  if (addresses.some((address) => !IPV4_CIDR.test(address))) {
    settings.fail('wafExemptAddresses', 'IPv4 addresses or CIDR blocks, comma-separated')
  }
  return [
    ...new Set(addresses.map((address) => (address.includes('/') ? address : `${address}/32`))),
  ]
}

/**
 * The edge rules' numbers. `wafRateLimitPer5Minutes` (one limit per address for every request,
 * which let anyone at a customer's address lock it out) is refused by name, so a cdk.json that
 * still sets it fails synthesis instead of being silently ignored. The per-address keyed ceiling
 * comes from the stage throttle; the largest plan must fit under it three times over, so a stage
 * throttle too small for the stage's own plans fails here with the settings to raise.
 */
export const edgeLimitsOf = (
  settings: StageContext,
  enterpriseLimits: PlanLimits,
  throttleRateLimit: number,
  waf: boolean,
): EdgeLimits => {
  if (settings.text('wafRateLimitPer5Minutes') !== undefined) {
    settings.fail(
      'wafRateLimitPer5Minutes',
      'nothing: it is replaced by wafKeylessPer5Minutes (requests without a key, per address), wafKeyedPerAddressPerMinute and largestPlanPerMinute (the per-key rule), docs/operations.md#edge-rules',
    )
  }
  const largestStagePlan = largestStagePlanPerMinute(enterpriseLimits)
  const ceiling = keyedPerAddressCeiling(throttleRateLimit)
  const wafKeyedPerAddressPerMinute = settings.integer('wafKeyedPerAddressPerMinute', {
    fallback: ceiling,
    min: WAF_LIMIT_RANGE.min,
    max: ceiling,
    why: `half of the stage throttle of ${throttleRateLimit}/s for a minute; raise throttleRateLimit for more`,
  })
  // Without the WAF only the usage-plan backstop bounds a plan: its rate (perMinute / 30 a
  // second) must fit under the stage throttle.
  const planRoom = waf
    ? Math.floor(wafKeyedPerAddressPerMinute / KEYED_ADDRESS_PLAN_MARGIN)
    : throttleRateLimit * 30
  const largestPlanPerMinute = settings.integer('largestPlanPerMinute', {
    fallback: Math.max(largestStagePlan, Math.min(10 * largestStagePlan, planRoom)),
    min: largestStagePlan,
    max: Math.floor(WAF_LIMIT_RANGE.max / wafPerKeyLimit(1)),
    why: `the stage's own largest plan allows ${largestStagePlan} a minute`,
  })
  if (largestPlanPerMinute > planRoom) {
    settings.fail(
      'largestPlanPerMinute',
      waf
        ? `at most ${planRoom} (a third of the ${wafKeyedPerAddressPerMinute} keyed requests a minute one address may send, wafKeyedPerAddressPerMinute, at most half of the stage throttle of ${throttleRateLimit}/s): raise throttleRateLimit first`
        : `at most ${planRoom} (the stage throttle of ${throttleRateLimit}/s times 30 covers a plan's usage-plan backstop): raise throttleRateLimit first`,
    )
  }
  return {
    largestPlanPerMinute,
    wafKeyedPerAddressPerMinute,
    wafExemptAddresses: exemptAddressesOf(settings),
    wafKeylessPer5Minutes: settings.integer('wafKeylessPer5Minutes', {
      fallback: WAF_KEYLESS_DEFAULT,
      ...WAF_LIMIT_RANGE,
    }),
  }
}
