/** Reads one context value (e.g. `(key) => app.node.tryGetContext(key)`). */
export type ContextReader = (key: string) => unknown

export const CONTEXT_ROOT = 'petstore'

/** Context settings, as `petstore.<stage>.<setting>` in cdk.json or `-c <stage>.<setting>=value`. */
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

/**
 * Switches that may also be given once for every stage synthesized (`-c waf=false`); a
 * `-c <stage>.<setting>` still wins for its stage.
 */
const APP_WIDE_SWITCHES = ['gradualDeployment', 'waf'] as const satisfies readonly StageSetting[]

const isAppWideSwitch = (setting: StageSetting): boolean =>
  (APP_WIDE_SWITCHES as readonly StageSetting[]).includes(setting)

/** An integer setting's default and bounds; `why` explains a bound in the error message. */
export interface IntegerRule {
  fallback: number
  min: number
  max?: number
  why?: string
}

/**
 * One stage's settings, typed. Each read returns the default when the setting is unset (absent,
 * null or ''), and throws an error naming the context key, the value and what was expected
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
 * Where a stage's setting comes from, most specific first: `-c production.waf=...`, then
 * `-c waf=...` for an app-wide switch, then the cdk.json object `petstore.production`.
 *
 * @example
 * const settings = stageContext((key) => app.node.tryGetContext(key), 'production')
 * settings.flag('waf', true) // -c production.waf=false, -c waf=false or cdk.json; else true
 */
export const stageContext = (context: ContextReader, stage: string): StageContext => {
  const root = context(CONTEXT_ROOT)
  const nested =
    root && typeof root === 'object' ? (root as Record<string, unknown>)[stage] : undefined
  const fromObject = nested && typeof nested === 'object' ? (nested as Record<string, unknown>) : {}
  // The key is what an error message names.
  const source = (setting: StageSetting): { key: string; value: unknown } => {
    const own = `${stage}.${setting}`
    const flat = context(own)
    if (flat !== undefined && flat !== null) return { key: own, value: flat }
    const everyStage = isAppWideSwitch(setting) ? context(setting) : undefined
    if (everyStage !== undefined && everyStage !== null) return { key: setting, value: everyStage }
    return { key: own, value: fromObject[setting] }
  }
  const raw = (setting: StageSetting): unknown => {
    const { value } = source(setting)
    return value === null || value === '' ? undefined : value
  }
  const fail = (setting: StageSetting, expected: string): never => {
    throw new Error(
      `Invalid context ${source(setting).key}=${JSON.stringify(raw(setting))}: expected ${expected}`,
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
