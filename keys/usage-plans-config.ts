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

/**
 * The tag of a stage's pool plan: the usage plan store keys are metered under (through its one
 * key, the pool key, which the authorizer returns as usageIdentifierKey for every store key). It
 * has neither throttle nor quota, so it never refuses before the stage throttle; the key sync
 * leaves it out (its key is never mirrored, so never a bearer key) and the keys CLI lists it
 * apart. The CDK and the local control plane make it; its name is `petstore-<stage>-store-keys`.
 */
export const POOL_PLAN_TAG = { key: 'petstore:pool', value: 'store-keys' } as const

/** Whether a usage plan's (or key's) tags mark it as the stage's pool. */
export const isPoolPlan = (tags: Record<string, string | undefined> | undefined): boolean =>
  tags?.[POOL_PLAN_TAG.key] === POOL_PLAN_TAG.value

/** The pool plan's name and description as the CDK and the local control plane give it. */
export const poolPlanSpec = (stage: string) => ({
  name: `petstore-${stage}-store-keys`,
  description: `Store keys (${stage}): metered under one pool key; no throttle or quota of its own (the stage throttle and the WAF per-key rule bound them)`,
  tags: { [POOL_PLAN_TAG.key]: POOL_PLAN_TAG.value },
})
