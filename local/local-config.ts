import {
  CONTROL_SECRET_PATTERN,
  CONTROL_SECRET_VARIABLE,
  localDataDir,
} from '#keys/local-control-config.ts'
import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import { checkUsagePlanNumbers } from '#keys/usage-plan-numbers-config.ts'
import type { BundleSource } from '#local/bundles/bundle-functions.ts'
import { API_KEY_FORMAT, LocalConfigError } from '#local/control-plane/local-config-error.ts'
import { isWellFormedApiKey } from '#shared/auth/bearer-token.ts'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  isPlanName,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
  parsePlanLimits,
} from '#shared/config/plans-config.ts'
import { STAGE_NAMES, STAGES } from '#shared/config/stages-config.ts'
import {
  CORS_ORIGIN_RULE,
  DEFAULT_CORS_ALLOW_ORIGIN,
  isCorsAllowOrigin,
} from '#shared/http/cors-headers.ts'

/** The local mode contract (docs/local-server.md, "Environment variables"). */
export interface LocalConfig {
  port: number
  host: string
  /** Directory for the embedded DynamoDB and the key file, or ':memory:'. */
  dataDir: string
  apiKeys: { plan: PlanName; key: string }[]
  /** An external DynamoDB endpoint instead of the embedded one. */
  dynamoEndpoint: string | undefined
  enterpriseLimits: PlanLimits
  /**
   * The local gateway's authorizer result cache, in seconds (API Gateway's resultsCacheTtl: the
   * stages deploy 60 and 300). 0 by default so a key revoked with `npm run keys` stops at once;
   * 60 shows staging's behaviour (a revoked or new key takes effect up to the TTL later).
   */
  authorizerCacheTtlSeconds: number
  /** PETSTORE_LOCAL_SECRET: the control plane's secret instead of the data directory's. */
  controlSecret: string | undefined
  /** PETSTORE_CORS_ORIGIN (default `*`): the origin browser pages may call from; unset: no CORS. */
  corsAllowOrigin?: string
  /**
   * PETSTORE_BUNDLES (`npm start -- --bundles`): run the functions as `cdk deploy` ships them, the
   * bundles of this cloud assembly with a stage's template (PETSTORE_BUNDLES_STAGE, default
   * staging), instead of the TypeScript sources.
   */
  bundles?: BundleSource
}

export { LocalConfigError }

/** Where `npm start` listens unless PORT says otherwise (the keys CLI looks there too). */
export const DEFAULT_PORT = 3000

const parsePort = (text: string): number => {
  if (!/^\d+$/.test(text) || Number(text) > 65535) {
    throw new LocalConfigError(`PORT must be a port number from 0 to 65535, got "${text}"`)
  }
  return Number(text)
}

const parseApiKeys = (text: string): LocalConfig['apiKeys'] =>
  text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry, index) => {
      const separator = entry.indexOf(':')
      const plan = entry.slice(0, separator).trim().toLowerCase()
      const key = entry.slice(separator + 1).trim()
      if (separator < 0 || !isPlanName(plan)) {
        throw new LocalConfigError(
          // Which entry, never what it says: any part of it may be a key.
          `PETSTORE_API_KEYS entries must be plan:key with plan one of ${PLAN_NAMES.join(', ')}; entry ${index + 1} is not`,
        )
      }
      if (!isWellFormedApiKey(key)) {
        throw new LocalConfigError(
          `PETSTORE_API_KEYS: the ${plan} key (entry ${index + 1}) must be ${API_KEY_FORMAT}`,
        )
      }
      return { plan, key }
    })

/**
 * Whether an endpoint is AWS's own DynamoDB (`dynamodb.<region>.amazonaws.com`, its FIPS,
 * dual-stack `api.aws`, account-based and China forms: "Amazon DynamoDB endpoints and quotas",
 * AWS General Reference), where a function needs real credentials.
 */
export const isAwsEndpoint = (endpoint: string | undefined): boolean => {
  const host = endpoint ? URL.parse(endpoint)?.hostname.toLowerCase() : undefined
  return host !== undefined && /\.(amazonaws\.com|amazonaws\.com\.cn|api\.aws)$/.test(host)
}

const HOST_CREDENTIALS = 'PETSTORE_BUNDLES_HOST_CREDENTIALS'

/**
 * The bundles get dummy credentials (bundle-functions.ts); this shell's AWS credentials only when
 * the operator says so, and only for an endpoint on AWS, the one store that checks them. An AWS
 * endpoint without that word stops the start, rather than every request failing to sign.
 */
const readHostCredentials = (env: NodeJS.ProcessEnv, endpoint: string | undefined): boolean => {
  const text = env[HOST_CREDENTIALS]?.trim() ?? ''
  if (!['', '0', '1'].includes(text)) {
    throw new LocalConfigError(`${HOST_CREDENTIALS} must be 1 or 0, got "${text}"`)
  }
  const wanted = text === '1'
  if (wanted && !isAwsEndpoint(endpoint)) {
    throw new LocalConfigError(
      `${HOST_CREDENTIALS}=1 hands this shell's AWS credentials to the bundles, which only a DYNAMODB_ENDPOINT on AWS (https://dynamodb.<region>.amazonaws.com) needs; ${endpoint ? `${endpoint} takes` : 'the embedded DynamoDB takes'} the dummy ones they get without it`,
    )
  }
  if (!wanted && isAwsEndpoint(endpoint)) {
    throw new LocalConfigError(
      `DYNAMODB_ENDPOINT ${endpoint} is on AWS: the bundles get dummy credentials, none of this shell's, unless you set ${HOST_CREDENTIALS}=1`,
    )
  }
  return wanted
}

const readBundleSource = (
  env: NodeJS.ProcessEnv,
  endpoint: string | undefined,
): BundleSource | undefined => {
  const assemblyDir = env.PETSTORE_BUNDLES?.trim()
  if (!assemblyDir) return undefined
  const stage = env.PETSTORE_BUNDLES_STAGE?.trim() || 'staging'
  if (!(STAGE_NAMES as readonly string[]).includes(stage)) {
    throw new LocalConfigError(
      `PETSTORE_BUNDLES_STAGE must be one of ${STAGE_NAMES.join(', ')}, got "${stage}"`,
    )
  }
  return { assemblyDir, stage, hostCredentials: readHostCredentials(env, endpoint) }
}

export const readLocalConfig = (env: NodeJS.ProcessEnv = process.env): LocalConfig => {
  const endpoint = env.DYNAMODB_ENDPOINT?.trim() || undefined
  if (endpoint !== undefined && !URL.canParse(endpoint)) {
    throw new LocalConfigError(
      `DYNAMODB_ENDPOINT must be a URL such as http://127.0.0.1:8000, got "${endpoint}"`,
    )
  }
  let enterpriseLimits = DEFAULT_ENTERPRISE_LIMITS
  if (env.ENTERPRISE_LIMITS?.trim()) {
    try {
      enterpriseLimits = parsePlanLimits(env.ENTERPRISE_LIMITS)
    } catch (error) {
      throw new LocalConfigError(`ENTERPRISE_LIMITS: ${(error as Error).message}`)
    }
    // The local Enterprise plan gets the deployed backstop: numbers API Gateway must accept.
    const { rateLimit, burstLimit, dailyQuota } = usagePlanBackstop(enterpriseLimits)
    checkUsagePlanNumbers(
      { rateLimit, burstLimit, quotaLimit: dailyQuota },
      (problem) =>
        new LocalConfigError(`ENTERPRISE_LIMITS: its usage plan would be refused: ${problem}`),
    )
  }
  const host = env.HOST?.trim() || '127.0.0.1'
  // Unset: the local gateway caches as the staging stage does.
  const ttlText =
    env.PETSTORE_AUTHORIZER_CACHE_TTL?.trim() || String(STAGES.staging.authorizerCacheTtlSeconds)
  // API Gateway accepts 0 to 3600 seconds (AWS docs, Authorizer authorizerResultTtlInSeconds).
  if (!/^\d+$/.test(ttlText) || Number(ttlText) > 3600) {
    throw new LocalConfigError(
      `PETSTORE_AUTHORIZER_CACHE_TTL must be seconds from 0 to 3600, got "${ttlText}"`,
    )
  }
  const controlSecret = env[CONTROL_SECRET_VARIABLE]?.trim() || undefined
  if (controlSecret !== undefined && !CONTROL_SECRET_PATTERN.test(controlSecret)) {
    // Never echoed: it is a secret.
    throw new LocalConfigError(
      `${CONTROL_SECRET_VARIABLE} must be 32 to 128 characters of A-Z a-z 0-9 . _ ~ -`,
    )
  }
  const corsAllowOrigin = env.PETSTORE_CORS_ORIGIN?.trim() || DEFAULT_CORS_ALLOW_ORIGIN
  if (!isCorsAllowOrigin(corsAllowOrigin)) {
    throw new LocalConfigError(`PETSTORE_CORS_ORIGIN ${CORS_ORIGIN_RULE}, got "${corsAllowOrigin}"`)
  }
  const bundles = readBundleSource(env, endpoint)
  return {
    ...(bundles ? { bundles } : {}),
    corsAllowOrigin,
    port: parsePort(env.PORT?.trim() || String(DEFAULT_PORT)),
    host,
    dataDir: localDataDir(env),
    apiKeys: parseApiKeys(env.PETSTORE_API_KEYS ?? ''),
    dynamoEndpoint: endpoint,
    enterpriseLimits,
    authorizerCacheTtlSeconds: Number(ttlText),
    controlSecret,
  }
}
