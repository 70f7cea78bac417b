import type { PlanLimits } from '#shared/config/plans-config.ts'

/**
 * The API Gateway usage plan behind each plan: a backstop for when the functions' exact limiter
 * cannot answer, never the first to refuse (docs/rate-limits-and-keys.md). API Gateway throttles
 * with a token bucket (rate refills it, burst is its size) and its quota counts every request it
 * lets through, the functions' own 429s included ("Throttle requests to your REST APIs", AWS
 * docs). With a burst of two minutes' requests and a refill of one minute's requests every 30 s,
 * a client that follows the headers (at most per-minute requests in any UTC minute, so at most
 * 2 x per-minute across two adjacent minutes) never empties the bucket; with three days' quota
 * a client hammering through a whole 15-minute suspension still leaves the gateway quota unspent.
 * The CDK usage plans and the local gateway both take their numbers from here.
 */
export interface UsagePlanBackstop {
  /** Token bucket refill, requests per second. */
  rateLimit: number
  /** Token bucket size, requests. */
  burstLimit: number
  /** Requests per UTC day the gateway lets through. */
  dailyQuota: number
}

export const usagePlanBackstop = ({ perMinute, perDay }: PlanLimits): UsagePlanBackstop => ({
  rateLimit: perMinute / 30,
  burstLimit: 2 * perMinute,
  dailyQuota: 3 * perDay,
})
