import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import { describe, expect, it } from 'vitest'
import { type ContextReader, readStageConfig, selectedStages } from '#infra/config/stage-config.ts'
import { DEFAULT_ENTERPRISE_LIMITS } from '#shared/config/plans-config.ts'

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

  it('reads the cdk.json object and lets -c <stage>.<setting> override it', () => {
    const context = contextOf({
      petstore: {
        production: {
          alarmEmail: 'ops@example.com',
          logRetentionDays: 365,
          enterpriseLimits: '6000/2000000',
          region: 'eu-west-1',
        },
      },
      'production.logRetentionDays': '180',
      'production.authorizerCacheTtlSeconds': '0',
      'production.apiGatewayCloudWatchRole': 'false',
    })
    const config = readStageConfig(context, 'production')
    expect(config).toMatchObject({
      alarmEmail: 'ops@example.com',
      logRetention: RetentionDays.SIX_MONTHS,
      enterpriseLimits: { perMinute: 6000, perDay: 2_000_000 },
      region: 'eu-west-1',
      authorizerCacheTtlSeconds: 0,
      apiGatewayCloudWatchRole: false,
    })
    // Settings of one stage never leak into the other.
    expect(readStageConfig(context, 'staging').alarmEmail).toBeUndefined()
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
