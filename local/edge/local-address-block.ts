import { randomUUID } from 'node:crypto'
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import type { Context } from 'aws-lambda'
import type { CloudWatchLogsEvent } from '#functions/address-block/access-log-events.ts'
import { addressBlockWafClient } from '#functions/address-block/address-block-dependencies.ts'
import {
  type AddressBlockEvent,
  type AddressBlockResult,
  addressBlockHandler,
} from '#functions/address-block/address-block-handler.ts'
import { AddressBlockRepository } from '#functions/address-block/address-block-repository.ts'
import type { AddressBlockSettings } from '#functions/address-block/address-block-run.ts'
import { IpSetWriter, parseIpSetRef } from '#functions/address-block/ip-set-writer.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import type { Clock, Timers } from '#shared/time/clock.ts'
import { LocalLogSubscription } from './local-access-log.ts'
import type { LocalWaf } from './local-waf.ts'

/**
 * The automatic block of the local stage: the address-block function's handler, in this process,
 * fed by the local gateway's access log through a local subscription (local-access-log.ts), its
 * counts and blocks in its own table of the local DynamoDB, and its IP sets in the local WAF
 * (local-waf.ts), reached through the WAF API the server serves (a WAFV2Client on
 * `/_local/wafv2`), as on AWS. The local edge reads those sets. The minute's reconcile (which ends
 * blocks) runs every `intervalMs` on `timers`, which a test that moves the clock fires itself.
 */
export const LOCAL_RECONCILE_INTERVAL_MS = 60_000

/** An address-block function as the local server invokes it: an event and a context in. */
export type AddressBlockInvoker = (
  event: AddressBlockEvent,
  context: Context,
) => Promise<AddressBlockResult>

export interface LocalAddressBlockOptions {
  waf: LocalWaf
  /** The automatic block's IP sets in `waf`, `name|id|scope`. */
  ipSets: { ipv4: string; ipv6: string }
  settings: AddressBlockSettings
  documentClient: DynamoDBDocumentClient
  tableName: string
  logger: AppLogger
  clock: Clock
  timers: Timers
  intervalMs?: number
  /** How long access log records wait to be delivered together. */
  deliveryMs?: number
}

export interface LocalAddressBlock {
  /** The access log's subscription: the local gateway writes every record it answers to it. */
  log: LocalLogSubscription
  /** Whether an address is on the automatic block list now (the local edge asks). */
  blocked(address: string): boolean
  /**
   * Starts invoking the handler (deliveries and the schedule), with the WAF API at `endpoint`
   * (known once the server listens) and the control plane's secret as credentials; or, with
   * `bundle`, the function's bundle in a process of its own (`--bundles`), reading that API itself.
   */
  start(
    endpoint: string,
    credentials: { accessKeyId: string; secretAccessKey: string },
    bundle?: AddressBlockInvoker,
  ): void
  /** The minute's run now (ends blocks that are over), as the schedule invokes it. */
  reconcile(): Promise<AddressBlockResult>
  /** An operator's lift, as `aws lambda invoke --payload '{"lift":[...]}'` is on AWS. */
  lift(addresses: readonly string[]): Promise<AddressBlockResult>
  stop(): Promise<void>
}

const lambdaContext = (): Context => ({
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'petstore-local-address-block',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:petstore-local-address-block',
  memoryLimitInMB: '256',
  awsRequestId: randomUUID(),
  logGroupName: '/aws/lambda/petstore-local-address-block',
  logStreamName: 'local',
  getRemainingTimeInMillis: () => FUNCTION_TIMEOUT_SECONDS.addressBlock * 1_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
})

export const localAddressBlock = (options: LocalAddressBlockOptions): LocalAddressBlock => {
  let handler: AddressBlockInvoker | undefined
  // One invocation at a time: deliveries, the schedule and lifts queue behind each other.
  let queue: Promise<unknown> = Promise.resolve()
  const invoke = (event: AddressBlockEvent): Promise<AddressBlockResult> => {
    const run = queue.then(() => {
      if (!handler) throw new Error('The address-block function has not started yet')
      return handler(event, lambdaContext())
    })
    queue = run.catch(() => undefined)
    return run
  }
  const log = new LocalLogSubscription({
    deliver: (event: CloudWatchLogsEvent) => invoke(event),
    clock: options.clock,
    timers: options.timers,
    ...(options.deliveryMs === undefined ? {} : { batchMs: options.deliveryMs }),
    onError: (message, error) => options.logger.error(message, { error }),
  })
  const scheduled = () => ({
    source: 'aws.events',
    'detail-type': 'Scheduled Event',
    time: new Date(options.clock()).toISOString(),
  })
  let timer: unknown
  let stopped = false
  const schedule = () => {
    const intervalMs = options.intervalMs ?? LOCAL_RECONCILE_INTERVAL_MS
    if (stopped || intervalMs <= 0) return
    timer = options.timers.setTimeout(() => {
      invoke(scheduled())
        .catch((error: unknown) =>
          options.logger.error('Automatic block reconcile failed', { error }),
        )
        .finally(schedule)
    }, intervalMs)
  }
  const refs = [options.ipSets.ipv4, options.ipSets.ipv6]
  return {
    log,
    blocked: (address) => options.waf.contains(refs, address),
    start: (endpoint, credentials, bundle) => {
      if (bundle) {
        handler = bundle
        schedule()
        return
      }
      const waf = addressBlockWafClient({ endpoint, region: 'us-east-1', credentials })
      handler = addressBlockHandler({
        repository: new AddressBlockRepository({
          client: options.documentClient,
          tableName: options.tableName,
        }),
        ipSets: {
          IPV4: new IpSetWriter({ client: waf, ref: parseIpSetRef(options.ipSets.ipv4) }),
          IPV6: new IpSetWriter({ client: waf, ref: parseIpSetRef(options.ipSets.ipv6) }),
        },
        settings: options.settings,
        logger: options.logger,
        metrics: { addMetric: () => undefined },
        clock: options.clock,
      })
      schedule()
    },
    reconcile: () => invoke(scheduled()),
    lift: (addresses) => invoke({ lift: [...addresses] }),
    stop: async () => {
      stopped = true
      if (timer !== undefined) options.timers.clearTimeout(timer)
      await log.stop()
      await queue
    },
  }
}
