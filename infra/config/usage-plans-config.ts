import {
  limitsFor,
  PLAN_DISPLAY_NAMES,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
} from '#shared/config/plans-config.ts'
import type { StageName } from './stage-config.ts'

/** One API Gateway usage plan: the backstop ahead of the functions' own rate limiter. */
export interface UsagePlanSpec {
  plan: PlanName
  /** `petstore-<stage>-<plan>`, as shown in the console. */
  name: string
  description: string
  /** Requests per second (per-minute limit / 60) and bucket size (the per-minute limit). */
  throttle: { rateLimit: number; burstLimit: number }
  /** Requests per UTC day. */
  dailyQuota: number
}

/** decisions.md, "Rate limits": throttle rate = per-minute / 60, burst = per-minute, quota = per-day. */
export const usagePlanSpecs = (stage: StageName, enterprise: PlanLimits): UsagePlanSpec[] =>
  PLAN_NAMES.map((plan) => {
    const { perMinute, perDay } = limitsFor(plan, enterprise)
    return {
      plan,
      name: `petstore-${stage}-${plan}`,
      description: `${PLAN_DISPLAY_NAMES[plan]} plan (${stage}): ${perMinute} requests per minute, ${perDay} per day`,
      throttle: { rateLimit: perMinute / 60, burstLimit: perMinute },
      dailyQuota: perDay,
    }
  })
