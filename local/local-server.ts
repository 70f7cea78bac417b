import { mkdir } from 'node:fs/promises'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { addressBlockTableDefinition } from '#functions/address-block/address-block-repository.ts'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import { loadBundleFunctions } from '#local/bundles/bundle-functions.ts'
import {
  bootstrapControlPlane,
  type LocalKeys,
} from '#local/control-plane/control-plane-bootstrap.ts'
import { MANAGEMENT_API_PATH } from '#local/control-plane/control-plane-handler.ts'
import { localControlSecret } from '#local/control-plane/control-plane-secret.ts'
import { ControlPlaneStore } from '#local/control-plane/control-plane-store.ts'
import {
  LOCAL_KEY_SYNC_INTERVAL_MS,
  type LocalKeySync,
  startLocalKeySync,
} from '#local/control-plane/local-key-sync-runner.ts'
import {
  type LocalAddressBlockView,
  type LocalEdgeSettings,
  localStageEdge,
} from '#local/edge/local-stage-edge.ts'
import { clientErrorAnswer } from '#local/gateway/client-error.ts'
import { refuseTunnel } from '#local/gateway/gateway-http.ts'
import type { ProxyHandler, TokenAuthorizer } from '#local/gateway/local-gateway.ts'
import type { RequestLogWriter } from '#local/gateway/request-log.ts'
import type { BackstopFor } from '#local/gateway/usage-plan-throttle.ts'
import type { MacSecrets } from '#shared/auth/project-key.ts'
import { API_VERSION_PATH, ROUTES } from '#shared/config/routes-config.ts'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import {
  idempotencyTableDefinition,
  keyMirrorTableDefinition,
  petTableDefinition,
  rateLimitTableDefinition,
  storeKeyTableDefinition,
} from '#shared/data/table-keys.ts'
import { type Clock, systemClock, systemTimers, type Timers } from '#shared/time/clock.ts'
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts'
import {
  type EmbeddedDynamo,
  ensureTable,
  IN_MEMORY,
  startEmbeddedDynamo,
} from './embedded-dynamo.ts'
import type { LocalConfig } from './local-config.ts'
import {
  type LocalTableNames,
  localCursorSecret,
  localFunctionEnvironment,
  localKeyMacSecrets,
  localTableNames,
} from './local-environment.ts'
import { listenerFor } from './local-listener.ts'

/**
 * The whole API on one machine, as a library (`npm start` is its CLI): starts the embedded
 * DynamoDB (or uses config.dynamoEndpoint), creates the tables, gives the Lambda entries the
 * environment they get on AWS, and serves them behind the local gateway at http://HOST:PORT/v1.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

export interface LocalServer {
  /** http://HOST:PORT/v1 with the port actually bound (PORT=0 picks a free one). */
  baseUrl: string
  keys: LocalKeys
  /** The management API of the local control plane (an APIGatewayClient endpoint). */
  managementEndpoint: string
  /** What every request to the control plane must carry (control-plane-secret.ts). */
  controlSecret: string
  /** Runs the local key sync now (after any change made so far) and returns what it did. */
  syncKeys(): Promise<KeySyncResult>
  /** Waits for the runs the control plane's changes so far started themselves to finish. */
  keySyncSettled(): Promise<void>
  /** The DynamoDB endpoint the functions use. */
  endpoint: string
  /** True when the endpoint is the embedded DynamoDB of this server. */
  embedded: boolean
  /**
   * The local edge's automatic block (local/edge/local-stage-edge.ts): its IP sets in the local
   * WAF, the access log's subscription, and the function's runs.
   */
  addressBlock: LocalAddressBlockView
  /** Stops accepting, lets in-flight requests finish, then closes the embedded DynamoDB. */
  stop(): Promise<void>
}

/** How many servers this process started: each after the first loads fresh function instances. */
let serversStarted = 0

/**
 * The URL of a Lambda entry module for the n-th server of this process. An entry builds its
 * dependencies from the environment once, at import, as a Lambda instance does at its cold start;
 * a second server in one process (tests run many) gets instances of its own, by a URL of its own,
 * so its functions read its tables and endpoint, not the first server's. `npm start` runs one.
 */
const entryUrl = (entry: string, server: number): string => {
  const url = pathToFileURL(join(ROOT, entry))
  if (server > 1) url.searchParams.set('server', String(server))
  return url.href
}

const loadSourceHandlers = async (server: number) => {
  // The same entry modules Lambda loads, imported after their environment is in place.
  const entries = await Promise.all(
    ROUTES.map(async (route) => {
      const module = (await import(entryUrl(functionEntry(route), server))) as {
        handler: ProxyHandler
      }
      return [route.operationId, module.handler] as const
    }),
  )
  // The authorizer's own entry too: it reads the key mirror (KEY_MIRROR_TABLE_NAME), as on AWS.
  const authorizer = (await import(entryUrl(AUTHORIZER_ENTRY, server))) as {
    handler: TokenAuthorizer
  }
  return {
    handlers: Object.fromEntries(entries) as Record<
      (typeof ROUTES)[number]['operationId'],
      ProxyHandler
    >,
    authorizer: authorizer.handler,
  }
}

const listen = (server: Server, config: LocalConfig) =>
  new Promise<AddressInfo>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(config.port, config.host, () => resolveListen(server.address() as AddressInfo))
  })

interface StartLocalSettings extends LocalEdgeSettings {
  /** Another usage-plan backstop than the deployed one (tests force the gateway's own 429s). */
  backstopFor?: BackstopFor
  /** The local key sync's schedule in ms; 0: only on changes (tests drive the runs). */
  keySyncIntervalMs?: number
  /** Where one line per request goes (local/gateway/request-log.ts); npm start: its terminal. */
  requestLog?: RequestLogWriter
}

/**
 * A clock comes with the timers that read it: the gateway's time (token buckets, DAY quota,
 * authorizer cache) and the key sync's budget follow `clock`, and a change's sync run starts on
 * `timers`, which a test that moves the clock fires itself (or never, running syncs itself). The
 * functions read Date.now, so a test that moves their time fakes Date instead.
 */
export type StartLocalOptions = StartLocalSettings &
  ({ clock?: undefined; timers?: undefined } | { clock: Clock; timers: Timers })

/**
 * API Gateway's REST API quota "Total combined size of all header values, including header names,
 * values, any line terminators, and whitespaces": 10240 bytes, not adjustable (AWS docs, "Quotas
 * for configuring and running a REST API in API Gateway"). AWS documents the limit, not the
 * answer: locally it is 400 `validation_failed` with an Error body (docs/api.md has no code for
 * 431; Node's own answer, a bare 431, would break "an Error body on every non-2xx"). Node counts
 * the request line too, which only makes the local limit stricter.
 */
export const MAX_HEADER_BYTES = 10_240
/** How long a stop waits for requests in flight before it closes their connections. */
export const SHUTDOWN_GRACE_MS = 3_000

export const startLocal = async (
  config: LocalConfig,
  options: StartLocalOptions = {},
): Promise<LocalServer> => {
  if (config.dataDir === IN_MEMORY) return startOn(config, options, undefined)
  await mkdir(config.dataDir, { recursive: true })
  // Before anything reads the directory: a second server on it stops here, naming the first.
  const lock = await lockDataDir(config.dataDir)
  try {
    return await startOn(config, options, lock)
  } catch (error) {
    await lock.release()
    throw error
  }
}

/** The functions' environment (returned, and set in process.env), and the tables they use. */
const prepareDatastore = async (
  config: LocalConfig,
  {
    endpoint,
    embedded,
    tables,
    macSecrets,
    poolKey,
  }: {
    endpoint: string
    embedded: boolean
    tables: LocalTableNames
    macSecrets: MacSecrets
    poolKey: string
  },
) => {
  const environment = localFunctionEnvironment({
    endpoint,
    embedded,
    tables,
    macSecrets,
    poolKey,
    cursorSecret: await localCursorSecret(config.dataDir),
    ...(config.corsAllowOrigin ? { corsAllowOrigin: config.corsAllowOrigin } : {}),
  })
  Object.assign(process.env, environment)

  const admin = new DynamoDBClient({ endpoint })
  await ensureTable(admin, petTableDefinition(tables.pets))
  await ensureTable(admin, rateLimitTableDefinition(tables.rateLimits))
  await ensureTable(admin, idempotencyTableDefinition(tables.idempotency))
  await ensureTable(admin, keyMirrorTableDefinition(tables.keyMirror))
  await ensureTable(admin, storeKeyTableDefinition(tables.storeKeys))
  await ensureTable(admin, addressBlockTableDefinition(tables.addressBlocks))
  admin.destroy()
  return environment
}

/**
 * The functions the gateway invokes: the TypeScript entries in this process, or (config.bundles)
 * the bundles of a cloud assembly, each in a process of its own as Lambda runs them.
 */
const loadFunctions = async (config: LocalConfig, environment: Record<string, string>) => {
  if (!config.bundles) {
    serversStarted += 1
    return { ...(await loadSourceHandlers(serversStarted)), bundles: undefined }
  }
  const bundles = await loadBundleFunctions(config.bundles, environment)
  return { handlers: bundles.handlers, authorizer: bundles.authorizer, bundles }
}

/** The HTTP server the gateway and the control plane share, set as API Gateway behaves. */
const httpServerFor = (
  listener: RequestListener,
  { requestLog, clock }: Pick<StartLocalOptions, 'requestLog' | 'clock'>,
): Server => {
  const server = createServer(
    // Node answers an HTTP/1.1 request without Host with a bare 400. The gateway hands the
    // functions its own Host whatever the client sent, so such a request is served as any other.
    { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false },
    listener,
  )
  // The gateway decides when to ask for a body (after routing and authentication), and serves
  // requests with an Expect it does not know as if it were absent (Node: a bare 417).
  server.on('checkContinue', listener)
  server.on('checkExpectation', listener)
  server.on('connect', refuseTunnel)
  server.on(
    'clientError',
    clientErrorAnswer({ maxHeaderBytes: MAX_HEADER_BYTES, requestLog, clock }),
  )
  server.keepAliveTimeout = 5_000
  // A client may take as long as API Gateway's integration timeout (29 s) to send its request.
  server.requestTimeout = 30_000
  return server
}

/**
 * Stop accepting, let in-flight requests finish. A keep-alive connection whose last response
 * ends after close() would otherwise stay open until keepAliveTimeout (5 s): close connections as
 * soon as they fall idle. A client still sending its body (or never finishing it) is cut off after
 * a grace period, so shutdown always ends within SHUTDOWN_GRACE_MS plus the datastore's close.
 */
const closeServer = async (server: Server) => {
  const sweep = setInterval(() => server.closeIdleConnections(), 20)
  const cutOff = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS)
  await new Promise<void>((resolveClose) => {
    server.close(() => resolveClose())
    server.closeIdleConnections()
  }).finally(() => {
    clearInterval(sweep)
    clearTimeout(cutOff)
  })
}

/** The DynamoDB the functions use (embedded or config's), its tables, and the functions. */
const startDatastoreAndFunctions = async (
  config: LocalConfig,
  keys: { macSecrets: MacSecrets; poolKey: string },
) => {
  const embedded: EmbeddedDynamo | undefined = config.dynamoEndpoint
    ? undefined
    : await startEmbeddedDynamo(config.dataDir)
  const endpoint = config.dynamoEndpoint ?? (embedded?.endpoint as string)
  const tables = localTableNames(config.dataDir, embedded !== undefined)
  try {
    const environment = await prepareDatastore(config, {
      endpoint,
      embedded: embedded !== undefined,
      tables,
      ...keys,
    })
    return {
      embedded,
      endpoint,
      tables,
      functions: await loadFunctions(config, environment),
    }
  } catch (error) {
    await embedded?.close()
    throw error
  }
}

const startOn = async (
  config: LocalConfig,
  options: StartLocalOptions,
  lock: DataDirLock | undefined,
): Promise<LocalServer> => {
  const clock = options.clock ?? systemClock
  // First, so an unusable control-plane or key file stops the start before anything runs.
  const store = await ControlPlaneStore.open(config.dataDir, { clock })
  const macSecrets = await localKeyMacSecrets(config.dataDir)
  const keys = await bootstrapControlPlane(store, { ...config, macSecrets })
  const controlSecret = await localControlSecret(config.dataDir, config.controlSecret)
  const datastore = await startDatastoreAndFunctions(config, { ...keys, macSecrets })
  const { embedded, endpoint, tables, functions } = datastore
  const { handlers, authorizer, bundles } = functions
  const { logger } = await import('#shared/observability/logger.ts')

  let baseHost: string | undefined
  // The key sync's view of the mirror the authorizer reads, and the control plane's.
  const documentClient = createDocumentClient(dynamoConfigFromEnv(process.env))
  const edge = localStageEdge(options, {
    enterpriseLimits: config.enterpriseLimits,
    documentClient,
    tableName: tables.addressBlocks,
    logger,
    clock,
    timers: options.timers ?? systemTimers,
  })
  let keySync: LocalKeySync | undefined
  const listener = listenerFor(config, options, {
    store,
    functions: { handlers, authorizer },
    edge,
    documentClient,
    tables,
    logger,
    clock,
    controlSecret,
    keySync: () => keySync,
    baseHost: () => baseHost,
    macSecrets,
  })
  const server = httpServerFor(listener, options)
  let address: AddressInfo
  try {
    address = await listen(server, config)
  } catch (error) {
    documentClient.destroy()
    await bundles?.stop()
    await embedded?.close()
    throw error
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  baseHost = `${host}:${address.port}`
  const baseUrl = `http://${baseHost}${API_VERSION_PATH}`
  // The sync reaches the control plane over loopback, whichever address the server is bound to.
  const loopback = address.family === 'IPv6' ? '[::1]' : '127.0.0.1'
  const managementEndpoint = `http://${loopback}:${address.port}${MANAGEMENT_API_PATH}`
  await lock?.announce(baseUrl)

  const stop = async () => {
    await keySync?.stop()
    await closeServer(server)
    await edge.addressBlock.stop()
    await bundles?.stop()
    documentClient.destroy()
    await embedded?.close()
    await lock?.release()
  }
  try {
    keySync = await startLocalKeySync({
      endpoint: managementEndpoint,
      credentials: controlSecretCredentials(controlSecret),
      documentClient,
      tableName: tables.keyMirror,
      logger,
      clock,
      timers: options.timers ?? systemTimers,
      intervalMs: options.keySyncIntervalMs ?? LOCAL_KEY_SYNC_INTERVAL_MS,
      ...(bundles
        ? { handler: await bundles.startKeySync(managementEndpoint, controlSecret) }
        : {}),
    })
    store.onChange = (ids) => keySync?.changed(ids)
    // Every key works before the server is announced: the first sync has filled the mirror.
    await keySync.run()
    await edge.start(
      `http://${loopback}:${address.port}`,
      controlSecretCredentials(controlSecret),
      bundles && ((endpoint, env) => bundles.startAddressBlock(endpoint, controlSecret, env)),
    )
  } catch (error) {
    await stop()
    throw error
  }
  const started = keySync
  return {
    baseUrl,
    keys,
    managementEndpoint,
    controlSecret,
    syncKeys: () => started.run(),
    keySyncSettled: () => started.settled(),
    endpoint,
    embedded: embedded !== undefined,
    addressBlock: edge.view,
    stop,
  }
}
