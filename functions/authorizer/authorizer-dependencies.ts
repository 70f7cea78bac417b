import { requireEnv } from '#shared/config/env-config.ts'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import { logger } from '#shared/observability/logger.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import type { AuthorizerDependencies } from './authorizer-handler.ts'
import { KeyMirrorStore } from './key-mirror-store.ts'

/**
 * Everything the authorizer needs, built once per process from its environment. Called at module
 * scope by authorizer-lambda.ts, so a missing KEY_MIRROR_TABLE_NAME fails the cold start. The
 * authorizer reads the stage's key mirror (one GetItem per token) and never the API Gateway
 * management API, whose account-wide quota the key-sync function alone spends.
 */
export const authorizerDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): AuthorizerDependencies => {
  const client = createDocumentClient(dynamoConfigFromEnv(env))
  const mirror = new KeyMirrorRepository({
    client,
    tableName: requireEnv('KEY_MIRROR_TABLE_NAME', env),
    logger,
  })
  return {
    keyStore: new KeyMirrorStore({ mirror }),
    logger,
    observability: authorizerObservabilityMiddlewares(),
  }
}
