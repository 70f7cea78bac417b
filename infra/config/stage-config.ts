import { RemovalPolicy } from 'aws-cdk-lib'
import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  limitsFor,
  PLAN_LIMITS_FORMAT,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
  parsePlanLimits,
} from '#shared/config/plans-config.ts'
import {
  isStageName,
  STAGE_NAMES,
  STAGES,
  type StageDefaults,
  type StageName,
} from '#shared/config/stages-config.ts'
import {
  CORS_ORIGIN_RULE,
  DEFAULT_CORS_ALLOW_ORIGIN,
  isCorsAllowOrigin,
} from '#shared/http/cors-headers.ts'
import { type EdgeLimits, edgeLimitsOf, edgeThrottleFloor } from './edge-limits-config.ts'
import {
  type ContextReader,
  type SettingsReader,
  type StageContext,
  stageContext,
} from './stage-context-reader.ts'

export interface CustomDomainConfig {
  domainName: string
  /** ACM certificate for domainName, in the stage's region (regional endpoint). */
  certificateArn: string
  /** When both are set, an alias record is created; otherwise point DNS at the output target. */
  hostedZoneId?: string
  hostedZoneName?: string
}

/** Everything that differs between stages, resolved from CDK context and defaults. */
export interface StageConfig extends EdgeLimits {
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
   * so it is the stage's whole capacity, sized for all traffic (STAGES in shared/config/stages-config.ts). The rate is
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
   * An AWS WAF web ACL on the stage (infra/constructs/web-acl-construct.ts): rate-based rules per
   * source address and per key, an operator's block list, and a body-size rule answering 413 for
   * bodies over the API's limit (so bodies between Lambda's 6 MB and API Gateway's 10 MB never
   * reach a function). On by default in both stages: staging's URL is as public as production's.
   */
  waf: boolean
  /**
   * Concurrency reserved for the authorizer, which is also its cap, so a flood of forged keys
   * cannot take the operations' concurrency. Unset by default: a fresh account has 10 concurrent
   * executions in all and Lambda keeps 10 unreserved, so any reservation fails its first deploy.
   */
  authorizerReservedConcurrency?: number
  /**
   * The origin browser pages may call the stage from (Access-Control-Allow-Origin): `*` by
   * default, or one origin (shared/http/cors-headers.ts says why; docs/api.md, "Browsers").
   */
  corsAllowOrigin: string
}

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

/** How long the stage's log groups keep their events: one of CloudWatch Logs' retentions. */
export const logRetentionOf = (settings: StageContext, defaults: StageDefaults): RetentionDays => {
  const days = settings.integer('logRetentionDays', {
    fallback: defaults.logRetentionDays,
    min: 1,
    max: 3653,
  })
  if (!RETENTION_VALUES.has(days)) {
    settings.fail(
      'logRetentionDays',
      `a CloudWatch Logs retention (${[...RETENTION_VALUES].join(', ')})`,
    )
  }
  return days as RetentionDays
}

/** The Enterprise plan's limits, `perMinute/perDay`, or the default. */
export const enterpriseLimitsOf = (settings: StageContext): PlanLimits => {
  const text = settings.text('enterpriseLimits')
  if (text === undefined) return DEFAULT_ENTERPRISE_LIMITS
  try {
    return parsePlanLimits(text)
  } catch {
    return settings.fail('enterpriseLimits', PLAN_LIMITS_FORMAT)
  }
}

export const alarmEmailOf = (settings: StageContext): string | undefined => {
  const alarmEmail = settings.text('alarmEmail')
  if (alarmEmail !== undefined && !EMAIL.test(alarmEmail))
    settings.fail('alarmEmail', 'an email address')
  return alarmEmail
}

export const corsAllowOriginOf = (settings: StageContext): string => {
  const origin = settings.text('corsAllowOrigin') ?? DEFAULT_CORS_ALLOW_ORIGIN
  if (!isCorsAllowOrigin(origin))
    settings.fail('corsAllowOrigin', `a value that ${CORS_ORIGIN_RULE}`)
  return origin
}

/** The stage throttle's floor: the largest backstop rate of any plan, and whose. */
export interface StageThrottleFloor {
  rateLimit: number
  ratePlan: PlanName
}

/**
 * A stage throttle rate below this would refuse a client of that plan before its own usage plan
 * does (docs/rate-limits-and-keys.md, "Layers on AWS").
 */
export const stageThrottleFloor = (enterprise: PlanLimits): StageThrottleFloor =>
  PLAN_NAMES.map(
    (plan): StageThrottleFloor => ({
      ratePlan: plan,
      rateLimit: usagePlanBackstop(limitsFor(plan, enterprise)).rateLimit,
    }),
  ).reduce((best, candidate) => (candidate.rateLimit > best.rateLimit ? candidate : best))

/**
 * The stage throttle. The rate never undercuts the largest plan backstop: a stage throttle below
 * it would refuse a client of that plan before its own usage plan does. With the WAF, half a
 * minute of it (the per-address keyed ceiling) must also hold the largest plan three times
 * (edge-limits-config.ts). The burst has no such floor: the account's burst (5,000 by default)
 * caps every bucket above it anyway.
 */
export const stageThrottleOf = (
  settings: StageContext,
  defaults: StageDefaults,
  enterpriseLimits: PlanLimits,
  waf: boolean,
): Pick<StageConfig, 'throttleRateLimit' | 'throttleBurstLimit'> => {
  const floor = stageThrottleFloor(enterpriseLimits)
  const backstopRate = Math.ceil(floor.rateLimit)
  const edgeRate = waf ? edgeThrottleFloor(enterpriseLimits) : 0
  const minimumRate = Math.max(backstopRate, edgeRate)
  return {
    throttleRateLimit: settings.integer('throttleRateLimit', {
      fallback: Math.max(defaults.throttleRateLimit, minimumRate),
      min: minimumRate,
      why:
        edgeRate > backstopRate
          ? `with the WAF on, one address may take half of it for keyed requests, and that must hold the stage's largest plan three times; or turn waf off`
          : `the ${floor.ratePlan} usage plan's backstop is ${Number(floor.rateLimit.toFixed(2))} requests/s; a lower stage throttle would refuse requests that plan allows`,
    }),
    throttleBurstLimit: settings.integer('throttleBurstLimit', {
      fallback: defaults.throttleBurstLimit,
      min: 1,
    }),
  }
}

/** The authorizer's reserved concurrency, when set (0 or unset: none): its cap (StageConfig). */
const authorizerConcurrencyOf = (
  settings: StageContext,
): Pick<StageConfig, 'authorizerReservedConcurrency'> => {
  const reserved = settings.integer('authorizerReservedConcurrency', {
    fallback: 0,
    min: 0,
    why: 'leave it unset in an account whose concurrency quota is still 10',
  })
  return reserved > 0 ? { authorizerReservedConcurrency: reserved } : {}
}

/** A custom domain needs its certificate; an alias record needs both hosted zone settings. */
export const customDomainOf = (settings: StageContext): CustomDomainConfig | undefined => {
  const domainName = settings.text('domainName')
  const certificateArn = settings.text('certificateArn')
  const hostedZoneId = settings.text('hostedZoneId')
  const hostedZoneName = settings.text('hostedZoneName')
  if ((domainName === undefined) !== (certificateArn === undefined)) {
    settings.fail(
      domainName ? 'certificateArn' : 'domainName',
      'domainName and certificateArn together',
    )
  }
  if (
    (hostedZoneId === undefined) !== (hostedZoneName === undefined) ||
    (hostedZoneId && !domainName)
  ) {
    settings.fail('hostedZoneId', 'hostedZoneId and hostedZoneName together, with domainName')
  }
  if (!domainName || !certificateArn) return undefined
  return {
    domainName,
    certificateArn,
    ...(hostedZoneId && hostedZoneName ? { hostedZoneId, hostedZoneName } : {}),
  }
}

/** The account a stage is pinned to, when set: twelve digits, as AWS writes it. */
const accountOf = (settings: StageContext): string | undefined => {
  const account = settings.text('account')
  if (account !== undefined && !/^\d{12}$/.test(account)) {
    settings.fail('account', 'a 12-digit AWS account id, in quotes')
  }
  return account
}

/**
 * Everything that differs between stages, from cdk.json's `petstore.<stage>` and the stage's
 * defaults: one step per concern above, each failing synthesis with the setting and what it
 * expected.
 */
export const readStageConfig = (source: SettingsReader, stage: StageName): StageConfig => {
  const settings = stageContext(source, stage)
  const defaults = STAGES[stage]
  // In this order, the first bad setting is the one an error names.
  const logRetention = logRetentionOf(settings, defaults)
  const enterpriseLimits = enterpriseLimitsOf(settings)
  const alarmEmail = alarmEmailOf(settings)
  const waf = settings.flag('waf', true)
  const throttle = stageThrottleOf(settings, defaults, enterpriseLimits, waf)
  const customDomain = customDomainOf(settings)
  const corsAllowOrigin = corsAllowOriginOf(settings)
  const account = accountOf(settings)
  const region = settings.text('region')
  return {
    stage,
    retainData: stage === 'production',
    ...(account ? { account } : {}),
    ...(region ? { region } : {}),
    ...(customDomain ? { customDomain } : {}),
    enterpriseLimits,
    logRetention,
    authorizerCacheTtlSeconds: settings.integer('authorizerCacheTtlSeconds', {
      fallback: defaults.authorizerCacheTtlSeconds,
      min: 0,
      max: 3600,
    }),
    ...(alarmEmail ? { alarmEmail } : {}),
    ...throttle,
    corsAllowOrigin,
    apiGatewayCloudWatchRole: settings.flag('apiGatewayCloudWatchRole', true),
    gradualDeployment: settings.flag('gradualDeployment', stage === 'production'),
    waf,
    ...authorizerConcurrencyOf(settings),
    ...edgeLimitsOf(settings, enterpriseLimits, throttle.throttleRateLimit, waf),
  }
}

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

/**
 * Of the rate-limit table, which holds the usage history billing reads: production keeps it as it
 * keeps its logs, for the same reason (docs/rate-limits-and-keys.md, "The usage history").
 */
export const usageHistoryRemovalPolicy = (config: StageConfig): RemovalPolicy =>
  logRemovalPolicy(config)
