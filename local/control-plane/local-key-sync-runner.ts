import { randomUUID } from 'node:crypto'
import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import type { Context, EventBridgeEvent } from 'aws-lambda'
import { SCHEDULED_EVENT } from '#functions/key-sync/key-sync-events.ts'
import { keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { ApiGatewayAuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { type HeldRemoval, KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import type { Clock, Timers } from '#shared/time/clock.ts'
import { LOCAL_API_STAGE } from './control-plane-store.ts'

/**
 * The key sync of the local stage: the real key-sync handler, in this process, reading the
 * local control plane through API Gateway's management API (an APIGatewayClient pointed at the
 * server's own `/_local/apigateway`), writing the real key mirror table and flushing the local
 * gateway's authorizer cache through FlushStageAuthorizersCache, as on AWS. What differs is only
 * what triggers it: every change the control plane makes (a burst coalesced into one run) and a
 * schedule of a few seconds instead of EventBridge's minute.
 */
export const LOCAL_KEY_SYNC_INTERVAL_MS = 5_000
/** Changes closer together than this share one run. */
const CHANGE_COALESCE_MS = 20

/** A key-sync function as the local runner invokes it: an event and a context in, its result out. */
export type KeySyncInvoker = (event: unknown, context: Context) => Promise<KeySyncResult>

export interface LocalKeySyncOptions {
  /** The management API, e.g. http://127.0.0.1:3000/_local/apigateway. */
  endpoint: string
  /** The control plane's secret as SDK credentials (controlSecretCredentials). */
  credentials: { accessKeyId: string; secretAccessKey: string }
  documentClient: DynamoDBDocumentClient
  tableName: string
  logger: AppLogger
  clock: Clock
  /**
   * What starts a change's run. A test that moves `clock` passes timers it fires itself: a run
   * started by a real timer while the test moves the clock would see its budget end mid-read.
   */
  timers: Timers
  /** The schedule; 0 runs only on changes and when asked (tests drive runs themselves). */
  intervalMs: number
  /**
   * The key-sync function to invoke instead of the handler built here from the sources: its
   * bundle, in a process of its own (local/bundles), reading `endpoint` itself.
   */
  handler?: KeySyncInvoker
}

export interface LocalKeySync {
  /**
   * A run that starts after this call (joining one queued behind the run in progress). It reads
   * first what every change before it named.
   */
  run(): Promise<KeySyncResult>
  /** An operator's confirmation of held removals, by key id: a run of its own, queued as any. */
  confirm(keyIds: readonly string[]): Promise<KeySyncResult>
  /** The removals the key sync holds, by group. */
  held(): Promise<Record<string, HeldRemoval>>
  /** A control-plane change naming the plan and key ids its request named: a run follows shortly. */
  changed(ids: readonly string[]): void
  /**
   * Resolves once the changes made so far are synced by their own runs: no change waits for its
   * timer and no run is in progress or queued. Tests wait on it instead of polling on a deadline.
   */
  settled(): Promise<void>
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>
}

const lambdaContext = (): Context => ({
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'petstore-local-key-sync',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:petstore-local-key-sync',
  memoryLimitInMB: '256',
  awsRequestId: randomUUID(),
  logGroupName: '/aws/lambda/petstore-local-key-sync',
  logStreamName: 'local',
  getRemainingTimeInMillis: () => 60_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
})

/** The key-sync function's handler, on the local control plane and the local mirror. */
const localKeySyncHandler = (
  options: LocalKeySyncOptions,
  client: APIGatewayClient,
  state: KeySyncStateRepository,
) => {
  const { apiId, stage } = LOCAL_API_STAGE
  return keySyncHandler({
    source: new ApiGatewayKeySource({ client, restApiId: apiId, stage, clock: options.clock }),
    mirror: new KeyMirrorWriter({ client: options.documentClient, tableName: options.tableName }),
    state,
    flusher: new ApiGatewayAuthorizerCacheFlusher(client, apiId, stage),
    logger: options.logger,
    metrics: { addMetric: () => undefined },
    clock: options.clock,
    sendResponse: async () => {
      throw new Error('There is no CloudFormation locally')
    },
  })
}

/** The event a run is invoked with, naming the ids it reads first, as on AWS. */
const localEvent = (trigger: string, ids: readonly string[], nowMs: number) =>
  ({
    version: '0',
    id: randomUUID(),
    'detail-type': trigger,
    source: 'petstore.local',
    account: '000000000000',
    time: new Date(nowMs).toISOString(),
    region: 'local',
    resources: [],
    detail: ids.length > 0 ? { ids } : {},
  }) satisfies EventBridgeEvent<string, unknown>

export const startLocalKeySync = async (options: LocalKeySyncOptions): Promise<LocalKeySync> => {
  const client = new APIGatewayClient({
    endpoint: options.endpoint,
    region: 'us-east-1',
    credentials: options.credentials,
    maxAttempts: 2,
  })
  const state = new KeySyncStateRepository({
    client: options.documentClient,
    tableName: options.tableName,
  })
  // This process owns the data directory (LevelDB locks it): a lease left by a killed server is
  // held by no one, and would otherwise keep keys out of the mirror for its 90 s.
  await state.breakLease()
  const handler = options.handler ?? localKeySyncHandler(options, client, state)
  // Ids the control plane's changes named that no run has taken yet. Each run takes them as it
  // starts and names them in its event, as a CloudTrail event or the keys CLI names its ids on
  // AWS, so the run reads their plans first wherever the rotation stands.
  let named = new Set<string>()
  const takeNamed = (): string[] => {
    const ids = [...named].sort()
    named = new Set()
    return ids
  }
  const invoke = (trigger: string, ids: readonly string[]) =>
    handler(localEvent(trigger, ids, options.clock()), lambdaContext())

  // One run at a time (the handler's lease would skip a second one): a run asked for while one
  // is in progress waits for it, and all such asks share the next run.
  let running: Promise<KeySyncResult> | undefined
  let queued: Promise<KeySyncResult> | undefined
  const run = (trigger = 'Local control plane'): Promise<KeySyncResult> => {
    if (!running) {
      running = invoke(trigger, takeNamed()).finally(() => {
        running = undefined
      })
      return running
    }
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = undefined
        return run(trigger)
      })
    return queued
  }
  /** A run that shares nothing with others (a confirmation): after every run asked for so far. */
  const alone = async (start: () => Promise<KeySyncResult>): Promise<KeySyncResult> => {
    while (running || queued) await Promise.allSettled([running, queued])
    running = start().finally(() => {
      running = undefined
    })
    return running
  }
  const quietly = (trigger: string) => {
    // The handler logs a failure itself; the next trigger runs again.
    run(trigger).catch(() => undefined)
  }

  let changeTimer: unknown
  // Resolved when the pending change timer has started its run.
  let changeFired: Promise<void> | undefined
  let fired: () => void = () => undefined
  let stopped = false
  const schedule =
    options.intervalMs > 0
      ? setInterval(() => quietly(SCHEDULED_EVENT), options.intervalMs).unref()
      : undefined
  return {
    run: () => run(),
    confirm: (keyIds) => alone(() => handler({ confirmRemovals: [...keyIds] }, lambdaContext())),
    held: async () => (await state.get()).heldRemovals ?? {},
    changed: (ids) => {
      if (stopped) return
      for (const id of ids) named.add(id)
      if (changeTimer !== undefined) return
      changeFired = new Promise((resolveFired) => {
        fired = resolveFired
      })
      changeTimer = options.timers.setTimeout(() => {
        changeTimer = undefined
        quietly('Local control plane change')
        fired()
      }, CHANGE_COALESCE_MS)
    },
    settled: async () => {
      while (changeTimer !== undefined || running || queued) {
        await Promise.allSettled([
          changeTimer !== undefined ? changeFired : undefined,
          running,
          queued,
        ])
      }
    },
    stop: async () => {
      stopped = true
      clearInterval(schedule)
      if (changeTimer !== undefined) options.timers.clearTimeout(changeTimer)
      changeTimer = undefined
      fired()
      await Promise.allSettled([running, queued])
      client.destroy()
    },
  }
}
