import { Tags } from 'aws-cdk-lib'
import { Period, type RestApi, type UsagePlan } from 'aws-cdk-lib/aws-apigateway'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { usagePlanSpecs } from '#infra/config/usage-plans-config.ts'
import { type PlanName, USAGE_PLAN_TAG } from '#shared/config/plans-config.ts'

/** One usage plan per plan of the API on the API's stage, tagged with its plan name. */
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
    // The authorizer's key store knows a key's plan by this tag (a key attached to an untagged
    // plan of the stage counts as a custom Enterprise plan).
    Tags.of(usagePlan).add(USAGE_PLAN_TAG, spec.plan)
    usagePlans[spec.plan] = usagePlan
  }
  return usagePlans as Record<PlanName, UsagePlan>
}
