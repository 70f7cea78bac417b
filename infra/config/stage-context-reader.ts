/** Reads one CDK context value (e.g. `(key) => app.node.tryGetContext(key)`): `stage` only. */
export type ContextReader = (key: string) => unknown

/**
 * Reads one setting by its name under `petstore` in cdk.json, dotted: `production.alarmEmail`
 * is `"petstore": {"production": {"alarmEmail": …}}` (infra/config/cdk-json-settings.ts).
 */
export type SettingsReader = (key: string) => unknown

/** Where the settings live in cdk.json: `context.petstore.<stage>` and `context.petstore.release`. */
export const CONTEXT_ROOT = 'petstore'

/** A stage's settings, as `petstore.<stage>.<setting>` in cdk.json. */
export const STAGE_SETTINGS = [
  'account',
  'region',
  'domainName',
  'certificateArn',
  'hostedZoneId',
  'hostedZoneName',
  'enterpriseLimits',
  'logRetentionDays',
  'authorizerCacheTtlSeconds',
  'alarmEmail',
  'throttleRateLimit',
  'throttleBurstLimit',
  'gradualDeployment',
  'waf',
  'wafRateLimitPer5Minutes',
  'wafKeylessPer5Minutes',
  'largestPlanPerMinute',
  'wafKeyedPerAddressPerMinute',
  'wafExemptAddresses',
  'wafAutoBlockUnauthorizedPerMinute',
  'wafAutoBlockMinutes',
  'authorizerReservedConcurrency',
  'apiGatewayCloudWatchRole',
  'corsAllowOrigin',
] as const
export type StageSetting = (typeof STAGE_SETTINGS)[number]

/** An integer setting's default and bounds; `why` explains a bound in the error message. */
export interface IntegerRule {
  fallback: number
  min: number
  max?: number
  why?: string
}

/**
 * One stage's settings, typed. Each read returns the default when the setting is unset (absent,
 * null or ''), and throws an error naming the cdk.json setting, the value and what was expected
 * otherwise, so a typo fails synthesis instead of deploying a default.
 */
export interface StageContext {
  text(setting: StageSetting): string | undefined
  integer(setting: StageSetting, rule: IntegerRule): number
  flag(setting: StageSetting, fallback: boolean): boolean
  /** Fails synthesis for this setting's value. */
  fail(setting: StageSetting, expected: string): never
}

/**
 * One stage's settings from cdk.json (`petstore.<stage>`): a hand deploy and the pipeline read the
 * same file, so they deploy the same thing. An error names the setting where cdk.json holds it.
 *
 * @example
 * const settings = stageContext(settingsReader(readCdkJsonSettings()), 'production')
 * settings.flag('waf', true) // petstore.production.waf in cdk.json; else true
 */
export const stageContext = (settings: SettingsReader, stage: string): StageContext => {
  const raw = (setting: StageSetting): unknown => {
    const value = settings(`${stage}.${setting}`)
    return value === null || value === '' ? undefined : value
  }
  const fail = (setting: StageSetting, expected: string): never => {
    throw new Error(
      `Invalid cdk.json setting ${CONTEXT_ROOT}.${stage}.${setting}=${JSON.stringify(raw(setting))}: expected ${expected}`,
    )
  }
  return {
    fail,
    text: (setting) => {
      const value = raw(setting)
      if (value === undefined) return undefined
      return typeof value === 'string' && value.trim() !== ''
        ? value.trim()
        : fail(setting, 'a string')
    },
    integer: (setting, { fallback, min, max = Number.MAX_SAFE_INTEGER, why }) => {
      const value = raw(setting)
      if (value === undefined) return fallback
      const number = typeof value === 'number' ? value : Number(String(value).trim())
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
      return Number.isSafeInteger(number) && number >= min && number <= max
        ? number
        : fail(setting, `an integer ${range}${why ? ` (${why})` : ''}`)
    },
    flag: (setting, fallback) => {
      const value = raw(setting)
      if (value === undefined) return fallback
      if (value === true || value === 'true') return true
      if (value === false || value === 'false') return false
      return fail(setting, 'true or false')
    },
  }
}
