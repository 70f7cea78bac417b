import { mkdir } from 'node:fs/promises'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
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
import { type LocalIam, localIamFor } from '#local/deployed-iam/local-iam.ts'
import {
  type LocalAddressBlockView,
  type LocalEdgeSettings,
  localStageEdge,
} from '#local/edge/local-stage-edge.ts'
import { clientErrorAnswer } from '#local/gateway/client-error.ts'
import { refuseTunnel } from '#local/gateway/gateway-http.ts'
import type { RequestLogWriter } from '#local/gateway/request-log.ts'
import type { BackstopFor } from '#local/gateway/usage-plan-throttle.ts'
import type { MacSecrets } from '#shared/auth/project-key.ts'
import { API_VERSION_PATH } from '#shared/config/routes-config.ts'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import { type Clock, systemClock, systemTimers, type Timers } from '#shared/time/clock.ts'
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts'
import { type EmbeddedDynamo, IN_MEMORY, startEmbeddedDynamo } from './embedded-dynamo.ts'
import type { LocalConfig } from './local-config.ts'
import {
  type LocalTableNames,
  localCursorSecret,
  localFunctionEnvironment,
  localKeyMacSecrets,
  localTableNames,
} from './local-environment.ts'
import { loadFunctions } from './local-functions.ts'
import { listenerFor } from './local-listener.ts'
import { localTableDefinitions, prepareLocalTables } from './local-tables.ts'

/**
 * The whole API on one machine, as a library (`npm start` is its CLI): starts the embedded
 * DynamoDB (or uses config.dynamoEndpoint), creates the tables, gives the Lambda entries the
 * environment they get on AWS, and serves them behind the local gateway at http://HOST:PORT/v1.
 */

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
  /**
   * Every DynamoDB request a function's deployed role would refuse (and so was refused), each with
   * its fix; none for a server without the check (against AWS's own DynamoDB).
   */
  iamDenials(): readonly string[]
  /** Stops accepting, lets in-flight requests finish, then closes the embedded DynamoDB. */
  stop(): Promise<void>
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
  /** Told of each request a function's role refused, with its fix; default: the logger. */
  onIamDenied?: (message: string) => void
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

  const client = new DynamoDBClient({ endpoint })
  const definitions = localTableDefinitions(tables)
  try {
    await prepareLocalTables({
      client,
      definitions,
      embeddedDataDir: embedded && config.dataDir !== IN_MEMORY ? config.dataDir : undefined,
      endpoint,
    })
  } finally {
    client.destroy()
  }
  return { environment, definitions }
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
  {
    keys,
    onIamDenied,
  }: { keys: { macSecrets: MacSecrets; poolKey: string }; onIamDenied: (message: string) => void },
) => {
  const embedded: EmbeddedDynamo | undefined = config.dynamoEndpoint
    ? undefined
    : await startEmbeddedDynamo(config.dataDir)
  const endpoint = config.dynamoEndpoint ?? (embedded?.endpoint as string)
  const tables = localTableNames(config.dataDir, embedded !== undefined)
  let iam: LocalIam | undefined
  try {
    const { environment, definitions } = await prepareDatastore(config, {
      endpoint,
      embedded: embedded !== undefined,
      tables,
      ...keys,
    })
    iam = await localIamFor(config, {
      upstream: endpoint,
      environment,
      tables,
      definitions,
      onDenied: onIamDenied,
    })
    const unenforced = iam?.unresolved() ?? []
    // A managed policy or boundary the templates name but do not hold is not enforced here.
    if (unenforced.length > 0) {
      process.emitWarning(`IAM: unenforced locally, not in the templates: ${unenforced.join('; ')}`)
    }
    const functions = await loadFunctions(config, environment, iam)
    const guard = iam?.guard
    const close = async () => {
      await functions.bundles?.stop()
      await guard?.close()
      await embedded?.close()
    }
    return { embedded, endpoint, tables, iam, functions, close }
  } catch (error) {
    await iam?.guard.close()
    await embedded?.close()
    throw error
  }
}

/**
 * The DynamoDB clients of the server itself: the control plane's view of the key mirror, and the
 * key sync's, behind its role (the key sync's bundle has its own endpoint).
 */
const serverClients = (iam: LocalIam | undefined) => {
  const documentClient = createDocumentClient(dynamoConfigFromEnv(process.env))
  const keySyncClient = iam
    ? createDocumentClient(
        dynamoConfigFromEnv({
          ...process.env,
          DYNAMODB_ENDPOINT: iam.guard.endpointFor(KEY_SYNC_OPERATION),
        }),
      )
    : documentClient
  return {
    documentClient,
    keySyncClient,
    destroy: () => {
      documentClient.destroy()
      keySyncClient.destroy()
    },
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
  const { logger } = await import('#shared/observability/logger.ts')
  const { embedded, endpoint, tables, functions, iam, close } = await startDatastoreAndFunctions(
    config,
    {
      keys: { ...keys, macSecrets },
      onIamDenied: options.onIamDenied ?? ((message) => logger.error(message)),
    },
  )
  const { handlers, authorizer, bundles } = functions

  let baseHost: string | undefined
  const { documentClient, keySyncClient, destroy } = serverClients(iam)
  const closeDatastore = () => Promise.resolve(destroy()).then(close)
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
    await closeDatastore()
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
    await closeDatastore()
    await lock?.release()
  }
  try {
    keySync = await startLocalKeySync({
      endpoint: managementEndpoint,
      credentials: controlSecretCredentials(controlSecret),
      documentClient: keySyncClient,
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
    iamDenials: () => iam?.guard.denials() ?? [],
    stop,
  }
}
