import { Tags } from 'aws-cdk-lib'
import { Period, type RestApi, type UsagePlan } from 'aws-cdk-lib/aws-apigateway'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { usagePlanSpecs } from '#keys/usage-plans-config.ts'
import type { PlanName } from '#shared/config/plans-config.ts'

/** One usage plan per plan of the API on the API's stage, tagged with its plan (and limits). */
export const addUsagePlans = (api: RestApi, config: StageConfig): Record<PlanName, UsagePlan> => {
  const usagePlans: Partial<Record<PlanName, UsagePlan>> = {}
  for (const spec of usagePlanSpecs(config.stage, config.enterpriseLimits)) {
    const usagePlan = api.addUsagePlan(`UsagePlan-${spec.plan}`, {
      name: spec.name,
      description: spec.description,
      throttle: spec.throttle,
      quota: { limit: spec.dailyQuota, period: Period.DAY },
      apiStages: [{ api, stage: api.deploymentStage }],
    })
    // The key sync knows a key's plan (and an Enterprise plan's limits) only by these tags: keys
    // of a plan of the stage without valid tags are refused.
    for (const [key, value] of Object.entries(spec.tags)) Tags.of(usagePlan).add(key, value)
    usagePlans[spec.plan] = usagePlan
  }
  return usagePlans as Record<PlanName, UsagePlan>
}
