import type { PlanLimits } from '#shared/config/plans-config.ts'
import {
  defaultEdgeNumbers,
  type EdgeNumbers,
  KEYED_ADDRESS_PLAN_MARGIN,
  KEYED_ADDRESS_SHARE,
  keyedPerAddressCeiling,
  largestStagePlanPerMinute,
  WAF_LIMIT_RANGE,
  wafPerKeyLimit,
} from '#shared/edge/edge-rules-config.ts'
import type { StageContext } from './stage-context-reader.ts'

/** The WAF's numbers for one stage (docs/operations.md, "Edge rules"). */
export interface EdgeLimits extends EdgeNumbers {
  /**
   * IPv4 CIDRs (a known egress of a large customer) that the per-address keyed and preflight
   * rules skip and the automatic block never blocks.
   */
  wafExemptAddresses: string[]
}

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
  const defaults = defaultEdgeNumbers(throttleRateLimit, enterpriseLimits)
  return {
    largestPlanPerMinute,
    wafKeyedPerAddressPerMinute,
    wafExemptAddresses: exemptAddressesOf(settings),
    wafKeylessPer5Minutes: settings.integer('wafKeylessPer5Minutes', {
      fallback: defaults.wafKeylessPer5Minutes,
      ...WAF_LIMIT_RANGE,
    }),
    // A customer's unauthorized answers come from a key it sends, at most at its plan's rate;
    // above the keyed ceiling no address could reach it (the edge refuses the rest).
    wafAutoBlockUnauthorizedPerMinute: settings.integer('wafAutoBlockUnauthorizedPerMinute', {
      fallback: largestPlanPerMinute,
      min: largestPlanPerMinute,
      max: wafKeyedPerAddressPerMinute,
      why: `a client of the largest plan (largestPlanPerMinute, ${largestPlanPerMinute}) with a revoked key gets that many 401s a minute; above wafKeyedPerAddressPerMinute (${wafKeyedPerAddressPerMinute}) no address reaches it`,
    }),
    wafAutoBlockMinutes: settings.integer('wafAutoBlockMinutes', {
      fallback: defaults.wafAutoBlockMinutes,
      min: 1,
      max: 24 * 60,
    }),
  }
}
