import { GetUsagePlansCommand, type UsagePlan } from '@aws-sdk/client-api-gateway'
import { PAGE_SIZE } from '#keys/management-listing.ts'
import { isPoolPlan } from '#keys/usage-plans-config.ts'
import {
  PLAN_NAMES,
  type PlanFromTags,
  type PlanName,
  planFromTags,
} from '#shared/config/plans-config.ts'
import { KeyAdminError } from './key-admin-error.ts'
import type { ManagementCalls } from './management-calls.ts'
import type { MirrorView } from './stage-sync-client.ts'

/**
 * API Gateway's ceilings per account and Region ("Quotas for configuring and running a REST API
 * in API Gateway", AWS docs): 10,000 API keys, which cannot be raised, and 300 usage plans, which
 * can (Service Quotas). Staging and production in one account and Region share both.
 */
export const CEILINGS = { apiKeys: 10_000, usagePlans: 300 } as const
/** Warn from this share of a ceiling on. */
export const CEILING_WARNING_SHARE = 0.9

/** The tag a per-customer Enterprise plan carries besides the plan tags. */
export const CUSTOMER_TAG = 'petstore:customer'

export type PlanSelector = { plan: PlanName } | { customer: string }

/** A usage plan attached to the stage, as the key sync will see it. */
export interface StagePlan {
  id: string
  name: string
  /** `free` … `enterprise` for the stage's own plans, `enterprise:<customer>` for a customer's. */
  label: string
  customer: string | undefined
  /** What its keys get, or why they are refused (planFromTags). */
  grant: PlanFromTags
}

/** Warnings for a Region near a ceiling (API keys, usage plans). */
export const ceilingWarnings = ({
  apiKeys,
  usagePlans,
}: {
  apiKeys: number
  usagePlans: number
}): string[] => [
  ...(apiKeys >= CEILINGS.apiKeys * CEILING_WARNING_SHARE
    ? [
        `${apiKeys.toLocaleString('en-US')} API keys in this Region of API Gateway's ${CEILINGS.apiKeys.toLocaleString('en-US')}, a quota AWS does not raise ("Quotas for configuring and running a REST API in API Gateway"): make new keys store keys (create --store: any number, never in API Gateway), revoke unused keys (docs/operations.md#ceilings)`,
      ]
    : []),
  ...(usagePlans >= CEILINGS.usagePlans * CEILING_WARNING_SHARE
    ? [
        `${usagePlans} usage plans in this Region of API Gateway's ${CEILINGS.usagePlans}: ask for more through Service Quotas before per-customer plans run out (docs/operations.md#ceilings)`,
      ]
    : []),
]

/** A customer plan of the stage: attached to it, and not the pool plan of its store keys. */
const onStage = (calls: ManagementCalls, plan: UsagePlan): boolean => {
  if (isPoolPlan(plan.tags)) return false
  return (plan.apiStages ?? []).some(
    (stage) =>
      stage.apiId === calls.context.outputs.restApiId &&
      stage.stage === calls.context.outputs.stageName,
  )
}

const labelOf = (
  calls: ManagementCalls,
  plan: UsagePlan & { id: string },
): { label: string; customer: string | undefined } => {
  const standard = PLAN_NAMES.find((name) => calls.context.outputs.planIds[name] === plan.id)
  if (standard) return { label: standard, customer: undefined }
  const customer = plan.tags?.[CUSTOMER_TAG]
  if (customer) return { label: `enterprise:${customer}`, customer }
  return { label: plan.name ?? plan.id, customer: undefined }
}

/** The stage's plans, and how many plans the Region has (for its ceiling). */
export const stagePlans = async (
  calls: ManagementCalls,
): Promise<{ plans: StagePlan[]; regionPlans: number }> => {
  const all = await calls.all('usage plans (GetUsagePlans)', (position) =>
    calls.send(new GetUsagePlansCommand({ position, limit: PAGE_SIZE })),
  )
  const plans = all
    .filter((plan): plan is UsagePlan & { id: string } => plan.id !== undefined)
    .filter((plan) => onStage(calls, plan))
    .map((plan) => ({
      id: plan.id,
      name: plan.name ?? plan.id,
      ...labelOf(calls, plan),
      grant: planFromTags(plan.tags),
    }))
  return { plans, regionPlans: all.length }
}

export const resolvePlan = (
  calls: ManagementCalls,
  plans: StagePlan[],
  selector: PlanSelector,
): StagePlan => {
  const found =
    'plan' in selector
      ? plans.find((plan) => plan.id === calls.context.outputs.planIds[selector.plan])
      : plans.find((plan) => plan.customer === selector.customer)
  if (!found) {
    const wanted = 'plan' in selector ? selector.plan : `enterprise:${selector.customer}`
    throw new KeyAdminError(
      `No plan ${wanted} on stage ${calls.context.stage} (plans: ${plans.map((plan) => plan.label).join(', ') || 'none'})`,
    )
  }
  if ('error' in found.grant) {
    throw new KeyAdminError(
      `Usage plan ${found.name} is refused by the key sync (${found.grant.error}): its keys would get 401`,
    )
  }
  return found
}

/** Warns near a ceiling; refuses what the ceiling would refuse anyway, saying why. */
export const checkCeilings = (
  calls: ManagementCalls,
  counts: { apiKeys: number; usagePlans: number },
  adding: 'key' | 'plan',
) => {
  if (adding === 'key' && counts.apiKeys >= CEILINGS.apiKeys) {
    throw new KeyAdminError(
      `This Region has ${CEILINGS.apiKeys.toLocaleString('en-US')} API keys, API Gateway's ceiling, which AWS does not raise: make it a store key (${calls.context.keysCommand} create --store ...), or revoke unused keys first (docs/operations.md#ceilings)`,
    )
  }
  if (adding === 'plan' && counts.usagePlans >= CEILINGS.usagePlans) {
    throw new KeyAdminError(
      `This Region has ${counts.usagePlans} usage plans, API Gateway's quota (${CEILINGS.usagePlans}): ask for more through Service Quotas (docs/operations.md#ceilings)`,
    )
  }
  for (const warning of ceilingWarnings(counts)) calls.context.warn(warning)
}

/** The stage plan a key is on, if any (API Gateway allows one per stage). */
export const stagePlanOf = async (
  calls: ManagementCalls,
  keyId: string,
  plans: StagePlan[],
): Promise<StagePlan | undefined> => {
  const ofKey = await calls.all(`usage plans of key ${keyId} (GetUsagePlans)`, (position) =>
    calls.send(new GetUsagePlansCommand({ keyId, position, limit: PAGE_SIZE })),
  )
  const ids = new Set(ofKey.map((plan) => plan.id))
  return plans.find((plan) => ids.has(plan.id))
}

export const grantsOn = (plan: StagePlan) => {
  return (item: MirrorView | undefined, keyId: string) =>
    item?.keyId === keyId && item.usagePlanId === plan.id
}
