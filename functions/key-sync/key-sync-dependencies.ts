import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { ApiGatewayAuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import { TokenBucketPacer } from '#keys/call-pacer.ts'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import { requireEnv } from '#shared/config/env-config.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import { baseMiddlewares } from '#shared/observability/observability-middleware.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import { httpsPut } from './cloudformation-response.ts'
import type { KeySyncEvent } from './key-sync-events.ts'
import type { KeySyncDependencies } from './key-sync-handler.ts'

// What the key sync is built of, from its environment: clients, repositories, pacer.

/**
 * Management API client of the sync: short timeouts and few attempts, because the next scheduled
 * run is the real retry and a hung call must not stretch a run towards the next one. The options
 * object makes the SDK build its own NodeHttpHandler (@smithy/node-http-handler), so this module
 * needs no direct dependency on that package.
 */
const keySyncApiGatewayClient = (): APIGatewayClient =>
  new APIGatewayClient({
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000 },
  })

/**
 * Half the account's 10 requests/s (burst 40) at most, so a sync of many plans never starves
 * `cdk deploy` or the console; a sync of a few plans (under 10 calls) is never delayed.
 */
export const KEY_SYNC_CALL_RATE = { burst: 10, perSecond: 5 } as const

/**
 * The key sync's dependencies, built once per instance from its environment by
 * key-sync-lambda.ts; a missing KEY_MIRROR_TABLE_NAME, REST_API_ID or API_STAGE fails the cold
 * start.
 */
export const keySyncDependencies = (env: NodeJS.ProcessEnv = process.env): KeySyncDependencies => {
  const tableName = requireEnv('KEY_MIRROR_TABLE_NAME', env)
  const restApiId = requireEnv('REST_API_ID', env)
  const stage = requireEnv('API_STAGE', env)
  const { logger, metrics, clock, dynamo } = functionBase(KEY_SYNC_OPERATION, env)
  const apiGateway = keySyncApiGatewayClient()
  return {
    source: new ApiGatewayKeySource({
      client: apiGateway,
      restApiId,
      stage,
      pacer: new TokenBucketPacer(KEY_SYNC_CALL_RATE),
    }),
    mirror: new KeyMirrorWriter({ client: dynamo, tableName }),
    state: new KeySyncStateRepository({ client: dynamo, tableName }),
    flusher: new ApiGatewayAuthorizerCacheFlusher(apiGateway, restApiId, stage),
    logger,
    metrics,
    clock,
    sendResponse: httpsPut,
    observability: baseMiddlewares<KeySyncEvent, KeySyncResult>(logger, metrics),
  }
}
