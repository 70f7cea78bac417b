import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import { describe, expect, it } from 'vitest'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import {
  alarmEmailOf,
  customDomainOf,
  enterpriseLimitsOf,
  logRetentionOf,
  readStageConfig,
  selectedStages,
  stageThrottleFloor,
  stageThrottleOf,
} from '#infra/config/stage-config.ts'
import { type ContextReader, stageContext } from '#infra/config/stage-context-reader.ts'
import { usagePlanSpecs } from '#keys/usage-plans-config.ts'
import { DEFAULT_ENTERPRISE_LIMITS } from '#shared/config/plans-config.ts'
import { STAGES } from '#shared/config/stages-config.ts'

const contextOf =
  (values: Record<string, unknown>): ContextReader =>
  (key) =>
    values[key]

describe('stage selection', () => {
  it('synthesizes both stages unless -c stage names one', () => {
    expect(selectedStages(contextOf({}))).toEqual(['staging', 'production'])
    expect(selectedStages(contextOf({ stage: 'staging' }))).toEqual(['staging'])
    expect(selectedStages(contextOf({ stage: 'production' }))).toEqual(['production'])
  })

  it('rejects an unknown stage instead of silently deploying nothing', () => {
    expect(() => selectedStages(contextOf({ stage: 'prod' }))).toThrow(
      /stage="prod".*staging, production/,
    )
  })
})

describe('per-stage settings', () => {
  it('has defaults that need no context at all', () => {
    const staging = readStageConfig(contextOf({}), 'staging')
    const production = readStageConfig(contextOf({}), 'production')
    expect(staging).toMatchObject({
      stage: 'staging',
      retainData: false,
      enterpriseLimits: DEFAULT_ENTERPRISE_LIMITS,
      logRetention: RetentionDays.TWO_WEEKS,
      authorizerCacheTtlSeconds: 60,
      apiGatewayCloudWatchRole: true,
    })
    expect(production).toMatchObject({
      stage: 'production',
      retainData: true,
      logRetention: RetentionDays.THREE_MONTHS,
      authorizerCacheTtlSeconds: 300,
    })
    expect(staging.alarmEmail).toBeUndefined()
    expect(staging.customDomain).toBeUndefined()
    expect(staging.account).toBeUndefined()
  })

  it('sizes each stage throttle for all clients together, never below a plan backstop rate', () => {
    expect(readStageConfig(contextOf({}), 'production')).toMatchObject({
      throttleRateLimit: 5_000,
      throttleBurstLimit: 5_000,
    })
    expect(readStageConfig(contextOf({}), 'staging')).toMatchObject({
      throttleRateLimit: 1_000,
      throttleBurstLimit: 2_000,
    })
    for (const stage of ['staging', 'production'] as const) {
      const config = readStageConfig(contextOf({}), stage)
      for (const spec of usagePlanSpecs(stage, config.enterpriseLimits)) {
        expect(config.throttleRateLimit, spec.plan).toBeGreaterThanOrEqual(spec.throttle.rateLimit)
      }
    }
  })

  it('raises the default rate to a larger Enterprise backstop rate', () => {
    // 600,000 per minute: a backstop of 20,000 requests/s, above production's default (the
    // backstop floor alone: without the WAF).
    expect(
      readStageConfig(
        contextOf({ 'production.enterpriseLimits': '600000/900000000', 'production.waf': false }),
        'production',
      ),
    ).toMatchObject({ throttleRateLimit: 20_000, throttleBurstLimit: 5_000 })
  })

  it('with the WAF, raises the floor so half a minute of it holds the largest plan three times', () => {
    // Enterprise 5,000 a minute: one address may send 30 x rate a minute, at least 15,000.
    expect(() =>
      readStageConfig(contextOf({ 'staging.throttleRateLimit': '499' }), 'staging'),
    ).toThrow(
      /staging\.throttleRateLimit="499": expected an integer of at least 500 \(with the WAF on, one address may take half of it/,
    )
    expect(
      readStageConfig(contextOf({ 'staging.throttleRateLimit': '500' }), 'staging'),
    ).toMatchObject({
      throttleRateLimit: 500,
      wafKeyedPerAddressPerMinute: 15_000,
      largestPlanPerMinute: 5_000,
    })
    // 600,000 a minute: 60,000/s.
    expect(
      readStageConfig(
        contextOf({ 'production.enterpriseLimits': '600000/900000000' }),
        'production',
      ),
    ).toMatchObject({ throttleRateLimit: 60_000, wafKeyedPerAddressPerMinute: 1_800_000 })
    // The defaults: staging 1,000/s holds 30,000 a minute per address and plans up to 10,000.
    expect(readStageConfig(contextOf({}), 'staging')).toMatchObject({
      wafKeyedPerAddressPerMinute: 30_000,
      largestPlanPerMinute: 10_000,
    })
    expect(readStageConfig(contextOf({}), 'production')).toMatchObject({
      wafKeyedPerAddressPerMinute: 150_000,
      largestPlanPerMinute: 50_000,
    })
    // The ceiling may be lowered, never raised past half the throttle, nor below 3 x the plan.
    expect(
      readStageConfig(
        contextOf({ 'production.wafKeyedPerAddressPerMinute': '60000' }),
        'production',
      ),
    ).toMatchObject({ wafKeyedPerAddressPerMinute: 60_000, largestPlanPerMinute: 20_000 })
    expect(() =>
      readStageConfig(
        contextOf({ 'production.wafKeyedPerAddressPerMinute': '150001' }),
        'production',
      ),
    ).toThrow(/wafKeyedPerAddressPerMinute="150001": expected an integer from 10 to 150000/)
    expect(() =>
      readStageConfig(
        contextOf({
          'production.wafKeyedPerAddressPerMinute': '60000',
          'production.largestPlanPerMinute': '20001',
        }),
        'production',
      ),
    ).toThrow(/largestPlanPerMinute="20001": expected at most 20000/)
  })

  it('takes its floor from the Enterprise limits, or Business when Enterprise is smaller', () => {
    // Enterprise 12,000 per minute: 400 requests/s; Business 1,000 / 30 = 33.33.
    expect(stageThrottleFloor({ perMinute: 12_000, perDay: 3_000_000 })).toEqual({
      ratePlan: 'enterprise',
      rateLimit: 400,
    })
    expect(stageThrottleFloor({ perMinute: 100, perDay: 2_000 })).toMatchObject({
      ratePlan: 'business',
    })
    expect(
      readStageConfig(
        contextOf({
          'staging.enterpriseLimits': '100/2000',
          'staging.throttleRateLimit': '34',
          'staging.waf': false,
        }),
        'staging',
      ),
    ).toMatchObject({ throttleRateLimit: 34 })
  })

  it('takes a stage throttle at or above the floor and refuses one below it', () => {
    expect(
      readStageConfig(
        contextOf({
          'staging.throttleRateLimit': '167',
          'staging.throttleBurstLimit': 20_000,
          'staging.waf': false,
        }),
        'staging',
      ),
    ).toMatchObject({ throttleRateLimit: 167, throttleBurstLimit: 20_000 })
    expect(() =>
      readStageConfig(
        contextOf({ 'staging.throttleRateLimit': '166', 'staging.waf': false }),
        'staging',
      ),
    ).toThrow(
      'Invalid cdk.json setting petstore.staging.throttleRateLimit="166": expected an integer of at least 167 (the enterprise usage plan\'s backstop is 166.67 requests/s; a lower stage throttle would refuse requests that plan allows)',
    )
    expect(() =>
      readStageConfig(contextOf({ 'production.throttleBurstLimit': 0 }), 'production'),
    ).toThrow(/production\.throttleBurstLimit=0: expected an integer of at least 1/)
    // The floor moves with the Enterprise limits of the same stage.
    expect(() =>
      readStageConfig(
        contextOf({
          'production.enterpriseLimits': '12000/3000000',
          'production.throttleRateLimit': '300',
          'production.waf': false,
        }),
        'production',
      ),
    ).toThrow(/throttleRateLimit="300": expected an integer of at least 400/)
  })

  it("reads the stage's object of cdk.json's petstore settings", () => {
    const settings = settingsReader({
      production: {
        alarmEmail: 'ops@example.com',
        logRetentionDays: 180,
        enterpriseLimits: '6000/2000000',
        region: 'eu-west-1',
        account: '222222222222',
        authorizerCacheTtlSeconds: '0',
        apiGatewayCloudWatchRole: false,
      },
    })
    const config = readStageConfig(settings, 'production')
    expect(config).toMatchObject({
      alarmEmail: 'ops@example.com',
      logRetention: RetentionDays.SIX_MONTHS,
      enterpriseLimits: { perMinute: 6000, perDay: 2_000_000 },
      region: 'eu-west-1',
      account: '222222222222',
      authorizerCacheTtlSeconds: 0,
      apiGatewayCloudWatchRole: false,
    })
    // Settings of one stage never leak into the other.
    expect(readStageConfig(settings, 'staging').alarmEmail).toBeUndefined()
    expect(() =>
      readStageConfig(settingsReader({ production: { account: 222222222222 } }), 'production'),
    ).toThrow(
      'Invalid cdk.json setting petstore.production.account=222222222222: expected a string',
    )
  })

  it('rolls out gradually in production only and puts the WAF in front of both stages, unless told otherwise', () => {
    expect(readStageConfig(contextOf({}), 'production')).toMatchObject({
      gradualDeployment: true,
      waf: true,
    })
    expect(readStageConfig(contextOf({}), 'staging')).toMatchObject({
      gradualDeployment: false,
      waf: true,
    })
    // Each stage says so for itself: there is no setting for every stage at once.
    const settings = contextOf({ 'staging.waf': false, 'staging.gradualDeployment': 'true' })
    expect(readStageConfig(settings, 'staging')).toMatchObject({
      waf: false,
      gradualDeployment: true,
    })
    expect(readStageConfig(settings, 'production')).toMatchObject({ waf: true })
    expect(() => readStageConfig(contextOf({ 'staging.waf': 'on' }), 'staging')).toThrow(
      'Invalid cdk.json setting petstore.staging.waf="on": expected true or false',
    )
  })

  it('takes a custom domain only with its certificate', () => {
    const config = readStageConfig(
      contextOf({
        'production.domainName': 'api.example.com',
        'production.certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
      }),
      'production',
    )
    expect(config.customDomain).toEqual({
      domainName: 'api.example.com',
      certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
    })
    expect(() =>
      readStageConfig(contextOf({ 'production.domainName': 'api.example.com' }), 'production'),
    ).toThrow(/certificateArn/)
  })

  it.each([
    ['logRetentionDays', '13', /logRetentionDays/],
    ['authorizerCacheTtlSeconds', '3601', /authorizerCacheTtlSeconds.*0 to 3600/],
    ['enterpriseLimits', 'lots', /enterpriseLimits.*perMinute\/perDay/],
    ['alarmEmail', 'not-an-address', /alarmEmail/],
    ['throttleRateLimit', '-1', /throttleRateLimit/],
    ['apiGatewayCloudWatchRole', 'yes', /apiGatewayCloudWatchRole/],
  ])('fails synthesis with a clear message for a bad %s', (setting, value, message) => {
    expect(() => readStageConfig(contextOf({ [`staging.${setting}`]: value }), 'staging')).toThrow(
      message,
    )
  })
})

describe('stage settings, step by step', () => {
  /** One stage's settings, as cdk.json's `petstore.staging` would hold them. */
  const staging = (values: Record<string, unknown>) =>
    stageContext(
      contextOf(Object.fromEntries(Object.entries(values).map(([k, v]) => [`staging.${k}`, v]))),
      'staging',
    )

  it('log retention: the stage default, or a retention CloudWatch Logs offers', () => {
    expect(logRetentionOf(staging({}), STAGES.staging)).toBe(RetentionDays.TWO_WEEKS)
    expect(logRetentionOf(staging({ logRetentionDays: 30 }), STAGES.staging)).toBe(
      RetentionDays.ONE_MONTH,
    )
    expect(() => logRetentionOf(staging({ logRetentionDays: 13 }), STAGES.staging)).toThrow(
      /logRetentionDays=13: expected a CloudWatch Logs retention \(1, 3, 5, 7, 14/,
    )
  })

  it('Enterprise limits: the default, or perMinute/perDay', () => {
    expect(enterpriseLimitsOf(staging({}))).toEqual(DEFAULT_ENTERPRISE_LIMITS)
    expect(enterpriseLimitsOf(staging({ enterpriseLimits: '9000/2000000' }))).toEqual({
      perMinute: 9_000,
      perDay: 2_000_000,
    })
    expect(() => enterpriseLimitsOf(staging({ enterpriseLimits: '9000' }))).toThrow(
      'Invalid cdk.json setting petstore.staging.enterpriseLimits="9000": expected "perMinute/perDay" as whole numbers, perMinute at least 1 and perDay at least perMinute, e.g. "5000/1000000"',
    )
    expect(() => enterpriseLimitsOf(staging({ enterpriseLimits: '100/5' }))).toThrow(
      'perDay at least perMinute',
    )
  })

  it('alarm email: none by default, an address when given', () => {
    expect(alarmEmailOf(staging({}))).toBeUndefined()
    expect(alarmEmailOf(staging({ alarmEmail: ' ops@example.com ' }))).toBe('ops@example.com')
    expect(() => alarmEmailOf(staging({ alarmEmail: 'ops' }))).toThrow(/expected an email address/)
  })

  it('stage throttle: a default below the largest backstop is raised to it', () => {
    // Prepare: an Enterprise plan whose backstop (perMinute / 30 per second) passes 1,000 requests/s.
    const enterprise = { perMinute: 60_000, perDay: 10_000_000 }

    // Act
    const throttle = stageThrottleOf(staging({}), STAGES.staging, enterprise, false)

    // Assess
    expect(throttle).toEqual({ throttleRateLimit: 2_000, throttleBurstLimit: 2_000 })
  })

  it('custom domain: none, a domain with its certificate, and the hosted zone for an alias', () => {
    const certificateArn = 'arn:aws:acm:eu-west-1:123456789012:certificate/abc'
    expect(customDomainOf(staging({}))).toBeUndefined()
    expect(
      customDomainOf(
        staging({
          domainName: 'api.example.com',
          certificateArn,
          hostedZoneId: 'Z123',
          hostedZoneName: 'example.com',
        }),
      ),
    ).toEqual({
      domainName: 'api.example.com',
      certificateArn,
      hostedZoneId: 'Z123',
      hostedZoneName: 'example.com',
    })
    expect(() =>
      customDomainOf(
        staging({ domainName: 'api.example.com', certificateArn, hostedZoneId: 'Z1' }),
      ),
    ).toThrow(/hostedZoneId and hostedZoneName together, with domainName/)
    expect(() => customDomainOf(staging({ certificateArn }))).toThrow(
      /staging\.domainName=undefined: expected domainName and certificateArn together/,
    )
  })
})
