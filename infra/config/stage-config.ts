import { RemovalPolicy } from 'aws-cdk-lib'
import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  PLAN_LIMITS,
  PLAN_NAMES,
  type PlanLimits,
  parsePlanLimits,
} from '#shared/config/plans-config.ts'
import { stageThrottleFloor } from './usage-plans-config.ts'

/** The deployment stages (docs/operations.md, "What a stage is"): each is its own stack set. */
export const STAGE_NAMES = ['staging', 'production'] as const
export type StageName = (typeof STAGE_NAMES)[number]

export const isStageName = (value: string): value is StageName =>
  (STAGE_NAMES as readonly string[]).includes(value)

export interface CustomDomainConfig {
  domainName: string
  /** ACM certificate for domainName, in the stage's region (regional endpoint). */
  certificateArn: string
  /** When both are set, an alias record is created; otherwise point DNS at the output target. */
  hostedZoneId?: string
  hostedZoneName?: string
}

/** Everything that differs between stages, resolved from CDK context and defaults. */
export interface StageConfig {
  stage: StageName
  /** Production keeps its data: RETAIN, deletion protection, stack termination protection. */
  retainData: boolean
  /** Pins the stage to an account/region; unset means env-agnostic (the CLI's credentials decide). */
  account?: string
  region?: string
  customDomain?: CustomDomainConfig
  enterpriseLimits: PlanLimits
  logRetention: RetentionDays
  /** 0 disables the authorizer cache; API Gateway allows up to 3600. */
  authorizerCacheTtlSeconds: number
  alarmEmail?: string
  /**
   * The stage throttle (requests per second, burst): API Gateway applies it per method to every
   * client of the stage together, not per key ("Throttle requests to your REST APIs", AWS docs),
   * so it is the stage's whole capacity, sized for all traffic (STAGE_DEFAULTS). The rate is
   * never below the largest plan backstop's rate (stageThrottleFloor). The account-level
   * throttle (10,000 requests per second, burst 5,000 per Region by default, "Amazon API Gateway
   * quotas", AWS docs) still caps every stage of the account, whatever these say.
   */
  throttleRateLimit: number
  throttleBurstLimit: number
  /**
   * Whether this stage's stack sets the account-wide API Gateway CloudWatch Logs role (needed for
   * access and execution logs). Turn off when the account already has one.
   */
  apiGatewayCloudWatchRole: boolean
  /**
   * Production shifts traffic to a new function version gradually (CodeDeploy canary) and rolls
   * back on its alarms; staging switches at once.
   */
  gradualDeployment: boolean
  /**
   * An AWS WAF web ACL on the stage: a rate-based rule per source address (brute force) and a
   * body-size rule answering 413 for bodies over the API's limit (so bodies between Lambda's
   * 6 MB and API Gateway's 10 MB never reach a function). On by default in production.
   */
  waf: boolean
  /** Requests one source address may send in WAF's 5-minute window before it is blocked. */
  wafRateLimitPer5Minutes: number
}

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
  'apiGatewayCloudWatchRole',
] as const
export type StageSetting = (typeof STAGE_SETTINGS)[number]

/**
 * Switches that may also be given once for every stage synthesized (`-c waf=false`); a
 * `-c <stage>.<setting>` still wins for its stage.
 */
const APP_WIDE_SWITCHES = ['gradualDeployment', 'waf'] as const satisfies readonly StageSetting[]

const isAppWideSwitch = (setting: StageSetting): boolean =>
  (APP_WIDE_SWITCHES as readonly StageSetting[]).includes(setting)

interface StageDefaults {
  logRetentionDays: number
  authorizerCacheTtlSeconds: number
  throttleRateLimit: number
  throttleBurstLimit: number
}

/**
 * Staging is cheap and quick to change (short logs, short authorizer cache); production keeps
 * logs a quarter and caches authorizer decisions for API Gateway's default five minutes. The
 * stage throttles are the stage's capacity for all clients together: production at the account's
 * default burst (5,000) and half its default rate, leaving room for a second API in the Region;
 * staging a fifth of that rate with a burst for load tests.
 */
export const STAGE_DEFAULTS: Record<StageName, StageDefaults> = {
  staging: {
    logRetentionDays: 14,
    authorizerCacheTtlSeconds: 60,
    throttleRateLimit: 1_000,
    throttleBurstLimit: 2_000,
  },
  production: {
    logRetentionDays: 90,
    authorizerCacheTtlSeconds: 300,
    throttleRateLimit: 5_000,
    throttleBurstLimit: 5_000,
  },
}

/** Reads one context value (e.g. `(key) => app.node.tryGetContext(key)`). */
export type ContextReader = (key: string) => unknown

export const CONTEXT_ROOT = 'petstore'
export const STAGE_CONTEXT_KEY = 'stage'

/** The stages to synthesize: `-c stage=<name>` selects one, no value selects both. */
export const selectedStages = (context: ContextReader): StageName[] => {
  const selected = context(STAGE_CONTEXT_KEY)
  if (selected === undefined || selected === null || selected === '') return [...STAGE_NAMES]
  if (typeof selected === 'string' && isStageName(selected)) return [selected]
  throw new Error(
    `Invalid context stage=${JSON.stringify(selected)}: expected one of ${STAGE_NAMES.join(', ')}`,
  )
}

const RETENTION_VALUES = new Set<number>(
  Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'),
)
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

export const readStageConfig = (context: ContextReader, stage: StageName): StageConfig => {
  const root = context(CONTEXT_ROOT)
  const nested =
    root && typeof root === 'object' ? (root as Record<string, unknown>)[stage] : undefined
  const fromObject = nested && typeof nested === 'object' ? (nested as Record<string, unknown>) : {}
  // Most specific first: `-c production.waf=...`, then `-c waf=...` for an app-wide switch, then
  // the cdk.json object. The key is what an error message names.
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
  const text = (setting: StageSetting): string | undefined => {
    const value = raw(setting)
    if (value === undefined) return undefined
    return typeof value === 'string' && value.trim() !== ''
      ? value.trim()
      : fail(setting, 'a string')
  }
  const integer = (
    setting: StageSetting,
    fallback: number,
    min: number,
    max = Number.MAX_SAFE_INTEGER,
    why?: string,
  ): number => {
    const value = raw(setting)
    if (value === undefined) return fallback
    const number = typeof value === 'number' ? value : Number(String(value).trim())
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
    return Number.isSafeInteger(number) && number >= min && number <= max
      ? number
      : fail(setting, `an integer ${range}${why ? ` (${why})` : ''}`)
  }
  const flag = (setting: StageSetting, fallback: boolean): boolean => {
    const value = raw(setting)
    if (value === undefined) return fallback
    if (value === true || value === 'true') return true
    if (value === false || value === 'false') return false
    return fail(setting, 'true or false')
  }

  const defaults = STAGE_DEFAULTS[stage]
  const logRetentionDays = integer('logRetentionDays', defaults.logRetentionDays, 1, 3653)
  if (!RETENTION_VALUES.has(logRetentionDays)) {
    fail('logRetentionDays', `a CloudWatch Logs retention (${[...RETENTION_VALUES].join(', ')})`)
  }
  const limitsText = text('enterpriseLimits')
  let enterpriseLimits = DEFAULT_ENTERPRISE_LIMITS
  if (limitsText !== undefined) {
    try {
      enterpriseLimits = parsePlanLimits(limitsText)
    } catch {
      fail('enterpriseLimits', '"perMinute/perDay", e.g. "5000/1000000"')
    }
  }
  const alarmEmail = text('alarmEmail')
  if (alarmEmail !== undefined && !EMAIL.test(alarmEmail)) fail('alarmEmail', 'an email address')
  // The rate never undercuts the largest plan backstop: a stage throttle below it would refuse a
  // client of that plan before its own usage plan does. The burst has no such floor: the
  // account's burst (5,000 by default) caps every bucket above it anyway.
  const floor = stageThrottleFloor(enterpriseLimits)
  const minimumRate = Math.ceil(floor.rateLimit)
  const throttleRateLimit = integer(
    'throttleRateLimit',
    Math.max(defaults.throttleRateLimit, minimumRate),
    minimumRate,
    undefined,
    `the ${floor.ratePlan} usage plan's backstop is ${Number(floor.rateLimit.toFixed(2))} requests/s; a lower stage throttle would refuse requests that plan allows`,
  )
  const throttleBurstLimit = integer('throttleBurstLimit', defaults.throttleBurstLimit, 1)

  const domainName = text('domainName')
  const certificateArn = text('certificateArn')
  const hostedZoneId = text('hostedZoneId')
  const hostedZoneName = text('hostedZoneName')
  if ((domainName === undefined) !== (certificateArn === undefined)) {
    fail(domainName ? 'certificateArn' : 'domainName', 'domainName and certificateArn together')
  }
  if (
    (hostedZoneId === undefined) !== (hostedZoneName === undefined) ||
    (hostedZoneId && !domainName)
  ) {
    fail('hostedZoneId', 'hostedZoneId and hostedZoneName together, with domainName')
  }
  const account = text('account')
  const region = text('region')

  return {
    stage,
    retainData: stage === 'production',
    ...(account ? { account } : {}),
    ...(region ? { region } : {}),
    ...(domainName && certificateArn
      ? {
          customDomain: {
            domainName,
            certificateArn,
            ...(hostedZoneId && hostedZoneName ? { hostedZoneId, hostedZoneName } : {}),
          },
        }
      : {}),
    enterpriseLimits,
    logRetention: logRetentionDays as RetentionDays,
    authorizerCacheTtlSeconds: integer(
      'authorizerCacheTtlSeconds',
      defaults.authorizerCacheTtlSeconds,
      0,
      3600,
    ),
    ...(alarmEmail ? { alarmEmail } : {}),
    throttleRateLimit,
    throttleBurstLimit,
    apiGatewayCloudWatchRole: flag('apiGatewayCloudWatchRole', true),
    gradualDeployment: flag('gradualDeployment', stage === 'production'),
    waf: flag('waf', stage === 'production'),
    // WAF allows 10 to 2,000,000,000 per window ("Rate-based rule statement", AWS WAF docs).
    wafRateLimitPer5Minutes: integer(
      'wafRateLimitPer5Minutes',
      wafRateFloor(enterpriseLimits),
      10,
      2_000_000_000,
    ),
  }
}

/**
 * The default per-address WAF limit never undercuts a plan: twice the largest plan's per-minute
 * limit over WAF's 5-minute window (one address may serve a whole customer).
 */
export const wafRateFloor = (enterpriseLimits: PlanLimits): number =>
  2 *
  5 *
  Math.max(
    enterpriseLimits.perMinute,
    ...PLAN_NAMES.filter((plan) => plan !== 'enterprise').map(
      (plan) => PLAN_LIMITS[plan].perMinute,
    ),
  )

/** Per-stage CloudWatch namespace: two stages in one account must not share metrics or alarms. */
export const metricsNamespace = (stage: StageName): string => `Petstore/${stage}`

/**
 * Of the stage's log groups, whose names are fixed: production keeps its logs after a stack is
 * deleted or a group replaced, but not after a failed first create (RetainExceptOnCreate): a
 * group kept through a rolled-back create would make the retried deploy fail with "already
 * exists" ("DeletionPolicy attribute", AWS CloudFormation User Guide).
 */
export const logRemovalPolicy = (config: StageConfig): RemovalPolicy =>
  config.retainData ? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE : RemovalPolicy.DESTROY
