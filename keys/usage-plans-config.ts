import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import {
  limitsFor,
  PLAN_DISPLAY_NAMES,
  PLAN_NAMES,
  PLAN_TAGS,
  type PlanLimits,
  type PlanName,
} from '#shared/config/plans-config.ts'

/** One API Gateway usage plan: the backstop ahead of the functions' own rate limiter. */
export interface UsagePlanSpec {
  plan: PlanName
  /** `petstore-<stage>-<plan>`, as shown in the console. */
  name: string
  description: string
  /** Token bucket refill (requests per second) and size, from usagePlanBackstop. */
  throttle: { rateLimit: number; burstLimit: number }
  /** Requests per UTC day the gateway lets through, from usagePlanBackstop. */
  dailyQuota: number
  /** What the key sync reads to know the plan's keys' limits (PLAN_TAGS). */
  tags: Record<string, string>
}

/** The plan tag; Enterprise also carries its limits, the same ones its backstop is made of. */
const planTags = (plan: PlanName, { perMinute, perDay }: PlanLimits): Record<string, string> =>
  plan === 'enterprise'
    ? {
        [PLAN_TAGS.plan]: plan,
        [PLAN_TAGS.perMinute]: String(perMinute),
        [PLAN_TAGS.perDay]: String(perDay),
      }
    : { [PLAN_TAGS.plan]: plan }

/**
 * The tags every resource of a stage's stacks carries (petstore-stage-stacks.ts), its usage plans
 * included; the local control plane gives its plans the same ones.
 */
export const stageTags = (stage: string): Record<string, string> => ({
  project: 'petstore',
  'petstore:stage': stage,
})

/**
 * docs/rate-limits-and-keys.md, "Plans": each plan's limits and the backstop made of them. The
 * stage is a deployed one, or `local` for the local control plane's plans.
 */
export const usagePlanSpecs = (stage: string, enterprise: PlanLimits): UsagePlanSpec[] =>
  PLAN_NAMES.map((plan) => {
    const limits = limitsFor(plan, enterprise)
    const { rateLimit, burstLimit, dailyQuota } = usagePlanBackstop(limits)
    return {
      plan,
      name: `petstore-${stage}-${plan}`,
      description: `${PLAN_DISPLAY_NAMES[plan]} plan (${stage}): ${limits.perMinute} requests per minute, ${limits.perDay} per day`,
      throttle: { rateLimit, burstLimit },
      dailyQuota,
      tags: planTags(plan, limits),
    }
  })
