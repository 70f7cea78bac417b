import { parseMacSecrets } from '#shared/auth/project-key.ts'
import { requireEnv } from '#shared/config/env-config.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import { StoreKeyReader } from '#shared/data/store-key-reader.ts'
import { AUTHORIZER_OPERATION } from '#shared/observability/metrics.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import type { AuthorizerDependencies } from './authorizer-handler.ts'
import { StageKeyStore } from './stage-key-store.ts'

/**
 * The authorizer's dependencies, built once per instance from its environment by
 * authorizer-lambda.ts, so a missing or malformed variable fails the cold start. It reads the
 * stage's key mirror or its store key table (one GetItem per token, by the key's marker) and
 * never the API Gateway management API, whose account-wide quota the key-sync function alone
 * spends. Its secrets (the MAC secrets, the pool key) come in its environment, resolved by
 * CloudFormation at deploy time: no Secrets Manager call on a cold start.
 */
export const authorizerDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): AuthorizerDependencies => {
  const { logger, metrics, dynamo, clock } = functionBase(AUTHORIZER_OPERATION, env)
  const keyStore = new StageKeyStore({
    mirror: new KeyMirrorReader({
      client: dynamo,
      tableName: requireEnv('KEY_MIRROR_TABLE_NAME', env),
      logger,
    }),
    storeKeys: new StoreKeyReader({
      client: dynamo,
      tableName: requireEnv('STORE_KEY_TABLE_NAME', env),
      logger,
    }),
    macSecrets: parseMacSecrets(requireEnv('KEY_MAC_SECRETS', env)),
    poolKey: requireEnv('POOL_USAGE_KEY', env),
    clock,
    logger,
  })
  return {
    keyStore,
    usageKeyOf: (key) => keyStore.usageKeyOf(key),
    logger,
    observability: authorizerObservabilityMiddlewares({ metrics }),
  }
}
