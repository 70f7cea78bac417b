import type { RequestListener } from 'node:http'
import { KeyUsageRepository } from '#keys/key-usage-repository.ts'
import { StoreKeyRepository } from '#keys/store-key-repository.ts'
import { localOutputs, localUsagePlanOf } from '#local/control-plane/control-plane-bootstrap.ts'
import {
  createControlPlaneHandler,
  withControlPaths,
} from '#local/control-plane/control-plane-handler.ts'
import { keyUsageEndpoint } from '#local/control-plane/control-plane-key-usage.ts'
import type { ControlPlaneStore } from '#local/control-plane/control-plane-store.ts'
import { storeKeysEndpoint } from '#local/control-plane/control-plane-store-keys.ts'
import type { LocalKeySync } from '#local/control-plane/local-key-sync-runner.ts'
import type { localStageEdge } from '#local/edge/local-stage-edge.ts'
import type { LocalWaf } from '#local/edge/local-waf.ts'
import { withApiReference } from '#local/gateway/api-reference-route.ts'
import { AuthorizerCache } from '#local/gateway/authorizer-cache.ts'
import { createLocalGateway, type LocalGatewayOptions } from '#local/gateway/local-gateway.ts'
import { noteKeyId, withRequestLog } from '#local/gateway/request-log.ts'
import { secretDigest } from '#local/gateway/secret-digest.ts'
import { UsagePlanThrottle } from '#local/gateway/usage-plan-throttle.ts'
import { formatMacSecrets, type MacSecrets } from '#shared/auth/project-key.ts'
import { API_VERSION_PATH } from '#shared/config/routes-config.ts'
import type { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { LocalConfig } from './local-config.ts'
import type { LocalTableNames } from './local-environment.ts'
import type { StartLocalOptions } from './local-server.ts'

// The local server's one request listener and the control plane it serves beside the API.

/** The control plane on the local store, its key sync and the mirror the authorizer reads. */
const controlPlaneFor = ({
  store,
  authorizerCache,
  usagePlanThrottle,
  documentClient,
  tables,
  logger,
  clock,
  controlSecret,
  keySync,
  baseUrl,
  waf,
  macSecrets,
}: {
  store: ControlPlaneStore
  authorizerCache: AuthorizerCache
  usagePlanThrottle: UsagePlanThrottle
  documentClient: ReturnType<typeof createDocumentClient>
  tables: LocalTableNames
  logger: AppLogger
  clock: Clock
  controlSecret: string
  keySync: () => LocalKeySync | undefined
  baseUrl: () => string
  waf: LocalWaf
  macSecrets: MacSecrets
}) => {
  const mirror = new KeyMirrorReader({
    client: documentClient,
    tableName: tables.keyMirror,
    logger,
  })
  return createControlPlaneHandler({
    store,
    flushAuthorizerCache: () => authorizerCache.clear(),
    usedToday: (value) => usagePlanThrottle.usedToday(secretDigest(value)),
    runKeySync: (confirmRemovals) => {
      const sync = keySync()
      if (!sync) return Promise.reject(new Error('The key sync has not started yet'))
      return confirmRemovals ? sync.confirm(confirmRemovals) : sync.run()
    },
    heldRemovals: () =>
      keySync()?.held() ?? Promise.reject(new Error('The key sync has not started yet')),
    mirrorItem: (keyHash) => mirror.get(keyHash),
    keyUsage: keyUsageEndpoint(
      new KeyUsageRepository({
        client: documentClient,
        tableName: tables.rateLimits,
        clock,
      }),
    ),
    storeKeys: storeKeysEndpoint(
      new StoreKeyRepository({ client: documentClient, tableName: tables.storeKeys, logger }),
    ),
    keyMacSecrets: () => formatMacSecrets(macSecrets),
    outputs: () => localOutputs(store, baseUrl()),
    waf,
    clock,
    secret: controlSecret,
    onError: (message, error) => logger.error(message, { error }),
  })
}

/**
 * The server's one request listener: the control plane's paths, the gateway behind the stage's
 * edge, the API reference page, and (npm start) the request log around them all.
 */
export const listenerFor = (
  config: LocalConfig,
  options: StartLocalOptions,
  {
    store,
    functions: { handlers, authorizer },
    edge,
    documentClient,
    tables,
    logger,
    clock,
    controlSecret,
    keySync,
    baseHost,
    macSecrets,
  }: {
    store: ControlPlaneStore
    functions: Pick<LocalGatewayOptions, 'handlers' | 'authorizer'>
    edge: ReturnType<typeof localStageEdge>
    documentClient: ReturnType<typeof createDocumentClient>
    tables: LocalTableNames
    logger: AppLogger
    clock: Clock
    controlSecret: string
    keySync: () => LocalKeySync | undefined
    baseHost: () => string | undefined
    macSecrets: MacSecrets
  },
): RequestListener => {
  const authorizerCache = new AuthorizerCache({
    ttlSeconds: config.authorizerCacheTtlSeconds,
    clock,
  })
  const usagePlanThrottle = new UsagePlanThrottle({
    clock,
    ...(options.backstopFor ? { backstopFor: options.backstopFor } : {}),
  })
  const gateway = createLocalGateway({
    handlers,
    authorizer,
    onError: (message, error) => logger.error(message, { error }),
    authorizerCache,
    usagePlanThrottle,
    usagePlanOf: localUsagePlanOf(store),
    ...(options.clock ? { clock: options.clock } : {}),
    edge: edge.edge,
    accessLog: (record) => edge.addressBlock.log.write(record),
    ...(options.wrongKeysBeforeDelay ? { wrongKeysBeforeDelay: options.wrongKeysBeforeDelay } : {}),
    ...(config.corsAllowOrigin ? { corsAllowOrigin: config.corsAllowOrigin } : {}),
    onAuthorized: noteKeyId,
    baseHost,
  })
  const controlPlane = controlPlaneFor({
    store,
    authorizerCache,
    usagePlanThrottle,
    documentClient,
    tables,
    logger,
    clock,
    controlSecret,
    keySync,
    baseUrl: () => `http://${baseHost()}${API_VERSION_PATH}`,
    waf: edge.waf,
    macSecrets,
  })
  const served = withApiReference(withControlPaths(controlPlane, gateway), (message, error) =>
    logger.error(message, { error }),
  )
  return options.requestLog ? withRequestLog(served, options.requestLog, options.clock) : served
}
