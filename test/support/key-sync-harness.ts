import { type KeySyncDependencies, keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { ApiGatewayAuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { DynamoTestEnv } from './dynamo-test-env.ts'
import { FAKE_API_ID, FAKE_STAGE, type FakeApiGateway } from './fake-api-gateway.ts'
import { fakeLogger } from './fake-logger.ts'
import { createKeyMirrorTable } from './key-mirror-table.ts'

export interface KeySyncHarnessOptions {
  env: DynamoTestEnv
  gateway: FakeApiGateway
  clock: Clock
  /** Wraps the real mirror repository (e.g. to hold its writes). */
  wrapMirror?: (mirror: KeyMirrorWriter) => KeySyncDependencies['mirror']
  /** The mirror's and the state's DynamoDB client (e.g. one behind a fault proxy). */
  client?: DynamoTestEnv['documentClient']
}

/**
 * The real key sync on a fresh key mirror table: the API Gateway key source and cache flusher
 * over the fake control plane, the mirror and state repositories on the test DynamoDB. Custom
 * resource answers are recorded instead of sent.
 */
export const createKeySyncHarness = async ({
  env,
  gateway,
  clock,
  wrapMirror = (mirror) => mirror,
  client = env.documentClient,
}: KeySyncHarnessOptions) => {
  const tableName = await createKeyMirrorTable(env)
  const mirror = new KeyMirrorWriter({ client, tableName })
  const state = new KeySyncStateRepository({ client, tableName })
  /** Metric totals since the last reset. */
  let metrics: Record<string, number> = {}
  const responses: string[] = []
  const logger = fakeLogger()
  const handler = keySyncHandler({
    source: new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
    }),
    mirror: wrapMirror(mirror),
    state,
    flusher: new ApiGatewayAuthorizerCacheFlusher(gateway.client, FAKE_API_ID, FAKE_STAGE),
    logger,
    metrics: {
      addMetric: (name, _unit, value) => {
        metrics[name] = (metrics[name] ?? 0) + value
      },
    },
    clock,
    sendResponse: async (_url, body) => {
      responses.push(body)
    },
  })
  return {
    handler,
    tableName,
    mirror,
    state,
    logger,
    responses,
    /** Metric totals since the last call, then reset. */
    takeMetrics: (): Record<string, number> => {
      const taken = metrics
      metrics = {}
      return taken
    },
  }
}
