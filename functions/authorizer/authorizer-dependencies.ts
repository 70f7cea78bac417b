import { requireEnv } from '#shared/config/env-config.ts'
import { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import { AUTHORIZER_OPERATION } from '#shared/observability/metrics.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import type { AuthorizerDependencies } from './authorizer-handler.ts'
import { KeyMirrorStore } from './key-mirror-store.ts'

/**
 * The authorizer's dependencies, built once per instance from its environment by
 * authorizer-lambda.ts, so a missing KEY_MIRROR_TABLE_NAME fails the cold start. The authorizer
 * reads the stage's key mirror (one GetItem per token) and never the API Gateway management API,
 * whose account-wide quota the key-sync function alone spends.
 */
export const authorizerDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): AuthorizerDependencies => {
  const { logger, metrics, dynamo } = functionBase(AUTHORIZER_OPERATION, env)
  const mirror = new KeyMirrorRepository({
    client: dynamo,
    tableName: requireEnv('KEY_MIRROR_TABLE_NAME', env),
    logger,
  })
  return {
    keyStore: new KeyMirrorStore({ mirror }),
    logger,
    observability: authorizerObservabilityMiddlewares({ metrics }),
  }
}
