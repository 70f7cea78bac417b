import { RemovalPolicy } from 'aws-cdk-lib'
import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import { AUTHORIZER_CACHE_TTL_SECONDS } from '#shared/config/authorizer-cache-config.ts'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  limitsFor,
  PLAN_LIMITS_FORMAT,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
  parsePlanLimits,
} from '#shared/config/plans-config.ts'
import { usagePlanBackstop } from '#shared/config/usage-plan-backstop-config.ts'
import {
  CORS_ORIGIN_RULE,
  DEFAULT_CORS_ALLOW_ORIGIN,
  isCorsAllowOrigin,
} from '#shared/http/cors-headers.ts'
import { type ContextReader, type StageContext, stageContext } from './stage-context-reader.ts'

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
  /**
   * Requests without a well-formed key one source address may send in WAF's 5-minute window
   * before such requests from it are blocked (requests with a key are never counted by it).
   */
  wafKeylessPer5Minutes: number
  /**
   * The largest per-minute limit a plan may have on this stage: the keys CLI refuses a
   * per-customer plan above it (it reads the API stack's LargestPlanPerMinute output), and the
   * WAF's per-key rule is derived from it, so no edge rule undercuts a plan the tools accept.
   */
  largestPlanPerMinute: number
  /**
   * The origin browser pages may call the stage from (Access-Control-Allow-Origin): `*` by
   * default, or one origin (shared/http/cors-headers.ts says why; docs/api.md, "Browsers").
   */
  corsAllowOrigin: string
}

export interface StageDefaults {
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
    authorizerCacheTtlSeconds: AUTHORIZER_CACHE_TTL_SECONDS.staging,
    throttleRateLimit: 1_000,
    throttleBurstLimit: 2_000,
  },
  production: {
    logRetentionDays: 90,
    authorizerCacheTtlSeconds: AUTHORIZER_CACHE_TTL_SECONDS.production,
    throttleRateLimit: 5_000,
    throttleBurstLimit: 5_000,
  },
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
 * it would refuse a client of that plan before its own usage plan does. The burst has no such
 * floor: the account's burst (5,000 by default) caps every bucket above it anyway.
 */
export const stageThrottleOf = (
  settings: StageContext,
  defaults: StageDefaults,
  enterpriseLimits: PlanLimits,
): Pick<StageConfig, 'throttleRateLimit' | 'throttleBurstLimit'> => {
  const floor = stageThrottleFloor(enterpriseLimits)
  const minimumRate = Math.ceil(floor.rateLimit)
  return {
    throttleRateLimit: settings.integer('throttleRateLimit', {
      fallback: Math.max(defaults.throttleRateLimit, minimumRate),
      min: minimumRate,
      why: `the ${floor.ratePlan} usage plan's backstop is ${Number(floor.rateLimit.toFixed(2))} requests/s; a lower stage throttle would refuse requests that plan allows`,
    }),
    throttleBurstLimit: settings.integer('throttleBurstLimit', {
      fallback: defaults.throttleBurstLimit,
      min: 1,
    }),
  }
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

/**
 * Everything that differs between stages, from CDK context and the stage's defaults: one step per
 * concern above, each failing synthesis with the context key and what it expected.
 */
export const readStageConfig = (context: ContextReader, stage: StageName): StageConfig => {
  const settings = stageContext(context, stage)
  const defaults = STAGE_DEFAULTS[stage]
  // In this order, the first bad setting is the one an error names.
  const logRetention = logRetentionOf(settings, defaults)
  const enterpriseLimits = enterpriseLimitsOf(settings)
  const alarmEmail = alarmEmailOf(settings)
  const throttle = stageThrottleOf(settings, defaults, enterpriseLimits)
  const customDomain = customDomainOf(settings)
  const corsAllowOrigin = corsAllowOriginOf(settings)
  const account = settings.text('account')
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
    waf: settings.flag('waf', stage === 'production'),
    ...edgeLimitsOf(settings, enterpriseLimits, throttle.throttleRateLimit),
  }
}

/** WAF's bounds on a rate-based rule's limit per window ("Rate-based rule statement", AWS WAF docs). */
export const WAF_LIMIT_RANGE = { min: 10, max: 2_000_000_000 } as const

/**
 * The WAF per-key rule's limit: twice what a key of the largest plan may send in WAF's 5-minute
 * window. A key sending more than twice its per-minute limit in a minute is suspended by the
 * functions' limiter anyway (docs/rate-limits-and-keys.md), so the edge only drops what would be
 * refused.
 */
export const wafPerKeyLimit = (largestPlanPerMinute: number): number => 2 * 5 * largestPlanPerMinute

/**
 * The default of largestPlanPerMinute: ten times the stage's largest plan, so per-customer plans
 * well above Enterprise are accepted without a redeploy, but never above what the stage throttle
 * serves (its rate must cover the plan's usage-plan backstop, perMinute / 30 a second).
 */
export const defaultLargestPlanPerMinute = (
  enterpriseLimits: PlanLimits,
  throttleRateLimit: number,
): number => Math.min(10 * largestStagePlanPerMinute(enterpriseLimits), throttleRateLimit * 30)

const largestStagePlanPerMinute = (enterpriseLimits: PlanLimits): number =>
  Math.max(...PLAN_NAMES.map((plan) => limitsFor(plan, enterpriseLimits).perMinute))

/**
 * The edge rules' numbers. `wafRateLimitPer5Minutes` (one limit per address for every request,
 * which let anyone at a customer's address lock it out) is refused by name, so a cdk.json that
 * still sets it fails synthesis instead of being silently ignored.
 */
export const edgeLimitsOf = (
  settings: StageContext,
  enterpriseLimits: PlanLimits,
  throttleRateLimit: number,
): Pick<StageConfig, 'wafKeylessPer5Minutes' | 'largestPlanPerMinute'> => {
  if (settings.text('wafRateLimitPer5Minutes') !== undefined) {
    settings.fail(
      'wafRateLimitPer5Minutes',
      'nothing: it is replaced by wafKeylessPer5Minutes (requests without a key, per address) and largestPlanPerMinute (the per-key rule), docs/operations.md#edge-rules',
    )
  }
  const largestStagePlan = largestStagePlanPerMinute(enterpriseLimits)
  const largestPlanPerMinute = settings.integer('largestPlanPerMinute', {
    fallback: Math.max(
      largestStagePlan,
      defaultLargestPlanPerMinute(enterpriseLimits, throttleRateLimit),
    ),
    min: largestStagePlan,
    max: Math.floor(WAF_LIMIT_RANGE.max / wafPerKeyLimit(1)),
    why: `the stage's own largest plan allows ${largestStagePlan} a minute`,
  })
  if (largestPlanPerMinute > throttleRateLimit * 30) {
    settings.fail(
      'largestPlanPerMinute',
      `at most ${throttleRateLimit * 30} (the stage throttle of ${throttleRateLimit}/s times 30 covers a plan's usage-plan backstop): raise throttleRateLimit first`,
    )
  }
  return {
    largestPlanPerMinute,
    wafKeylessPer5Minutes: settings.integer('wafKeylessPer5Minutes', {
      fallback: WAF_KEYLESS_DEFAULT,
      ...WAF_LIMIT_RANGE,
    }),
  }
}

/**
 * Requests without a well-formed key one address may send per 5 minutes: every one of them is
 * answered 401 without invoking anything, so this only caps what a flood costs in WAF
 * inspections and log lines; a client that forgot its key is told by its first 401.
 */
export const WAF_KEYLESS_DEFAULT = 1_500

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
