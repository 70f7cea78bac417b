import { describe, expect, it } from 'vitest'
import { bootstrapControlPlane } from '#local/control-plane/control-plane-bootstrap.ts'
import { ControlPlaneStore } from '#local/control-plane/control-plane-store.ts'
import { DEFAULT_ENTERPRISE_LIMITS } from '#shared/config/plans-config.ts'
import { TEST_MAC_SECRETS } from '#test/support/test-key-store.ts'
import { appStage, propsOf, resourcesOf } from './support/synth-app.ts'

/**
 * The local control plane's plans are the ones a deploy makes (the four plans and the pool plan
 * of store keys, which has neither throttle nor quota): what staging's template says of each
 * usage plan (name, description, throttle, DAY quota, tags, one stage), with the stage's name in
 * place of `local`.
 */
interface CfnUsagePlan {
  UsagePlanName: string
  Description: string
  Throttle?: { BurstLimit: number; RateLimit: number }
  Quota?: { Limit: number; Period: string }
  Tags: { Key: string; Value: string }[]
  ApiStages: unknown[]
}

describe('the local usage plans', () => {
  it('are the CDK usage plans of a stage, with the stage called local', async () => {
    const deployed = resourcesOf(appStage('staging').api, 'AWS::ApiGateway::UsagePlan').map(
      ([, plan]) => {
        const props = propsOf(plan) as unknown as CfnUsagePlan
        expect(props.ApiStages).toHaveLength(1)
        return {
          name: props.UsagePlanName.replace('staging', 'local'),
          description: props.Description.replace('staging', 'local'),
          throttle: props.Throttle && {
            rateLimit: props.Throttle.RateLimit,
            burstLimit: props.Throttle.BurstLimit,
          },
          quota: { limit: props.Quota?.Limit, period: props.Quota?.Period },
          tags: Object.fromEntries(
            props.Tags.map(({ Key, Value }) => [Key, Value === 'staging' ? 'local' : Value]),
          ),
        }
      },
    )
    const store = await ControlPlaneStore.open(':memory:', { clock: () => 0 })
    await bootstrapControlPlane(store, {
      dataDir: ':memory:',
      apiKeys: [],
      enterpriseLimits: DEFAULT_ENTERPRISE_LIMITS,
      macSecrets: TEST_MAC_SECRETS,
    })
    const local = store.usagePlans().map((plan) => ({
      name: plan.name,
      description: plan.description,
      throttle: plan.throttle,
      quota: { limit: plan.quota?.limit, period: plan.quota?.period },
      tags: plan.tags,
    }))
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name)
    expect(local.sort(byName)).toEqual(deployed.sort(byName))
    expect(store.usagePlans().every((plan) => plan.apiStages.length === 1)).toBe(true)
  })
})
