/**
 * Usage plans and their limits (docs/rate-limits-and-keys.md, "Plans").
 * One table for the rate limiter, the authorizer, the local key store and the CDK usage plans.
 */
export const PLAN_NAMES = ['free', 'pro', 'business', 'enterprise'] as const
export type PlanName = (typeof PLAN_NAMES)[number]

export interface PlanLimits {
  perMinute: number
  perDay: number
}

/** Enterprise is "custom": this default applies unless configuration (CDK context, env) says otherwise. */
export const DEFAULT_ENTERPRISE_LIMITS: PlanLimits = { perMinute: 5_000, perDay: 1_000_000 }

export const PLAN_LIMITS: Record<PlanName, PlanLimits> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
  enterprise: DEFAULT_ENTERPRISE_LIMITS,
}

/** Display names, as the usage plans are named in the AWS console. */
export const PLAN_DISPLAY_NAMES: Record<PlanName, string> = {
  free: 'Free',
  pro: 'Pro',
  business: 'Business',
  enterprise: 'Enterprise',
}

export const isPlanName = (value: string): value is PlanName =>
  (PLAN_NAMES as readonly string[]).includes(value)

export const limitsFor = (
  plan: PlanName,
  enterprise: PlanLimits = DEFAULT_ENTERPRISE_LIMITS,
): PlanLimits => (plan === 'enterprise' ? enterprise : PLAN_LIMITS[plan])

/** What plan limits written as text must be: ENTERPRISE_LIMITS and the enterpriseLimits context. */
export const PLAN_LIMITS_FORMAT =
  '"perMinute/perDay" as whole numbers, perMinute at least 1 and perDay at least perMinute, e.g. "5000/1000000"'

/** Parses `perMinute/perDay`, e.g. `5000/1000000`, as used by env vars and CDK context. */
export const parsePlanLimits = (text: string): PlanLimits => {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text)
  const perMinute = Number(match?.[1])
  const perDay = Number(match?.[2])
  // A day's quota below the minute's rate would refuse requests the rate allows.
  const problem = !match
    ? undefined
    : !(perMinute >= 1)
      ? `perMinute is ${perMinute}`
      : !(perDay >= perMinute)
        ? `perDay (${perDay}) is below perMinute (${perMinute})`
        : undefined
  if (!match || problem) {
    throw new Error(
      `Invalid plan limits "${text}": ${problem ? `${problem}; ` : ''}expected ${PLAN_LIMITS_FORMAT}`,
    )
  }
  return { perMinute, perDay }
}

/**
 * Usage plan tags (docs/rate-limits-and-keys.md, "Keys"): the CDK tags the plans it creates, and
 * the key sync reads them to mirror each key with its plan. `plan` names a PlanName; a
 * per-customer Enterprise plan also carries its own limits. A plan of the stage without valid
 * tags is refused, its keys left out of the mirror (planFromTags).
 */
export const PLAN_TAGS = {
  plan: 'petstore:plan',
  perMinute: 'petstore:perMinute',
  perDay: 'petstore:perDay',
} as const

export type PlanFromTags = { plan: PlanName; limits: PlanLimits } | { error: string }

/** A positive safe integer written in decimal digits only ("1e3", "1.5", "+5", "07" are refused). */
const positiveIntegerTag = (value: string | undefined): number | undefined => {
  const text = value?.trim()
  if (text === undefined || !/^[1-9]\d*$/.test(text)) return undefined
  const number = Number(text)
  return Number.isSafeInteger(number) ? number : undefined
}

/**
 * A usage plan's plan and limits from its tags, or why they are refused. Free, Pro and Business
 * take PLAN_LIMITS (limit tags on them are ignored); Enterprise needs both limit tags. Anything
 * missing or malformed is refused, never defaulted, so a typo cannot grant more than meant.
 */
export const planFromTags = (
  tags: Record<string, string | undefined> | undefined,
): PlanFromTags => {
  const raw = tags?.[PLAN_TAGS.plan]
  if (raw === undefined) return { error: `missing tag ${PLAN_TAGS.plan}` }
  const plan = raw.trim().toLowerCase()
  if (!isPlanName(plan)) {
    return { error: `tag ${PLAN_TAGS.plan} is not one of ${PLAN_NAMES.join(', ')}` }
  }
  if (plan !== 'enterprise') return { plan, limits: PLAN_LIMITS[plan] }
  const perMinute = positiveIntegerTag(tags?.[PLAN_TAGS.perMinute])
  if (perMinute === undefined) {
    return { error: `enterprise plan needs tag ${PLAN_TAGS.perMinute} as a positive integer` }
  }
  const perDay = positiveIntegerTag(tags?.[PLAN_TAGS.perDay])
  if (perDay === undefined) {
    return { error: `enterprise plan needs tag ${PLAN_TAGS.perDay} as a positive integer` }
  }
  if (perDay < perMinute) {
    return { error: `tag ${PLAN_TAGS.perDay} is below ${PLAN_TAGS.perMinute}` }
  }
  return { plan, limits: { perMinute, perDay } }
}
