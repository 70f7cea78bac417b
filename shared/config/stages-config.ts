/**
 * The deployment stages (docs/operations.md, "What a stage is"), each its own stack set: their
 * names and the defaults each starts from (their stack names are in stack-names-config.ts). The
 * CDK app (infra/config/stage-config.ts reads CDK context over these), the keys CLI and the smoke
 * test (`--stage`) and the local server (its authorizer cache) all read them here, free of
 * aws-cdk-lib, so the tools load fast.
 */
export interface StageDefaults {
  logRetentionDays: number
  /**
   * How long the stage's API Gateway caches an authorizer answer, in seconds (API Gateway
   * accepts 0 to 3600; its default is 300). On every stage the key sync flushes the cache after
   * a change to the keys, so the TTL bounds only what nothing told the sync about.
   */
  authorizerCacheTtlSeconds: number
  throttleRateLimit: number
  throttleBurstLimit: number
}

/**
 * Staging is cheap and quick to change (short logs, a short authorizer cache so key changes made
 * by hand show quickly; the local gateway caches as staging does); production keeps logs a
 * quarter and caches authorizer decisions for API Gateway's default five minutes. The stage
 * throttles are the stage's capacity for all clients together: production at the account's
 * default burst (5,000) and half its default rate, leaving room for a second API in the Region;
 * staging a fifth of that rate with a burst for load tests.
 */
export const STAGES = {
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
} as const satisfies Record<string, StageDefaults>

export type StageName = keyof typeof STAGES

export const STAGE_NAMES = Object.keys(STAGES) as StageName[]

export const isStageName = (value: string): value is StageName => Object.hasOwn(STAGES, value)
