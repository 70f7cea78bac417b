import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import type { Context } from 'aws-lambda'
import { ApiGatewayKeySource } from '#functions/key-sync/api-gateway-key-source.ts'
import { ApiGatewayAuthorizerCacheFlusher } from '#functions/key-sync/authorizer-cache-flusher.ts'
import { TokenBucketPacer } from '#functions/key-sync/call-pacer.ts'
import { KEY_SYNC_CALL_RATE } from '#functions/key-sync/key-sync-dependencies.ts'
import {
  type KeySyncEvent,
  type KeySyncResult,
  keySyncHandler,
} from '#functions/key-sync/key-sync-handler.ts'
import { ensureTable } from '#local/embedded-dynamo.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import { KeySyncStateRepository } from '#shared/data/key-sync-state-repository.ts'
import { KEY_MIRROR_TABLE, keyMirrorTableDefinition } from '#shared/data/table-keys.ts'
import { keySyncContext, scheduledEvent } from './api-gateway-events.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  keyValueOf,
  planTags,
} from './fake-api-gateway.ts'
import { fakeLogger } from './fake-logger.ts'

/** What a management call costs on AWS, per call (the range the sync is designed for). */
export const CALL_LATENCY_MS = { min: 100, max: 200 } as const
export const SYNC_TIMEOUT_MS = FUNCTION_TIMEOUT_SECONDS.keySync * 1_000
const MINUTE = 60_000

export interface SimulationDynamo {
  client: DynamoDBClient
  documentClient: ReturnType<typeof createDocumentClient>
}

export interface KeySyncAtScale {
  plans: number
  keys: number
  /** Scheduled runs, a minute apart, from an empty mirror until one read the last plan. */
  runs: number
  /** From the first run's start to the end of that last run. */
  fullReconciliationMs: number
  /** Keys in the mirror after it. */
  mirrored: number
  /** The longest any run took (all of them must end before the function's timeout). */
  longestRunMs: number
  /** Whether a run left its lease behind. */
  leaseKept: boolean
  /** From a key's CloudTrail event (its delivery not counted) to the key in the mirror, idle. */
  changeIdleMs: number
  /** The same, when the event arrives while a scheduled run is reading. */
  changeMidRunMs: number
}

/** A deterministic 100–200 ms per call. */
const latencies = (seed: number) => () => {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return CALL_LATENCY_MS.min + (state % (CALL_LATENCY_MS.max - CALL_LATENCY_MS.min + 1))
  }
}

let tables = 0

/**
 * The key sync at scale on a virtual clock: the real handler, key source, pacer (5 calls/s,
 * burst 10), mirror and state repositories (on `dynamo`), against an in-memory API Gateway
 * whose every call takes 100–200 ms of virtual time, with `plans` stage plans and `keys` keys.
 * Lambda's remaining time counts down on the same clock; a run that reaches the timeout throws.
 * DynamoDB calls take real time, not virtual (milliseconds each, not the bottleneck).
 */
export const simulateKeySyncAtScale = async (
  dynamo: SimulationDynamo,
  plans: number,
  keys: number,
): Promise<KeySyncAtScale> => {
  let now = Date.parse('2027-03-05T10:00:00Z')
  const clock = () => now
  const gateway = new FakeApiGateway()
  const planId = (p: number) => `plan${String(p).padStart(4, '0')}`
  for (let p = 0; p < plans; p += 1) gateway.addPlan(planId(p), { tags: planTags('pro') })
  for (let k = 0; k < keys; k += 1) gateway.addKey(`key${k}`, planId(k % plans))
  const latency = latencies(plans)()
  gateway.client.middlewareStack.add(
    (next) => async (args) => {
      now += latency()
      return next(args)
    },
    { step: 'initialize', name: 'virtualLatency' },
  )
  tables += 1
  const tableName = `simulated-key-mirror-${process.pid}-${tables}`
  await ensureTable(dynamo.client, keyMirrorTableDefinition(tableName))
  const mirror = new KeyMirrorRepository({ client: dynamo.documentClient, tableName })
  const state = new KeySyncStateRepository({ client: dynamo.documentClient, tableName })
  const handler = keySyncHandler({
    source: new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
      pacer: new TokenBucketPacer({
        ...KEY_SYNC_CALL_RATE,
        clock,
        sleep: async (ms) => {
          now += ms
        },
      }),
      clock,
    }),
    mirror,
    state,
    flusher: new ApiGatewayAuthorizerCacheFlusher(gateway.client, FAKE_API_ID, FAKE_STAGE),
    logger: fakeLogger(),
    metrics: { addMetric: () => undefined },
    clock,
    sendResponse: async () => undefined,
  })
  let longestRunMs = 0
  /** One invocation as Lambda makes it. */
  const invoke = async (event: KeySyncEvent): Promise<KeySyncResult> => {
    const started = now
    const context: Context = {
      ...keySyncContext(),
      getRemainingTimeInMillis: () => started + SYNC_TIMEOUT_MS - now,
    }
    const result = await handler(event, context)
    longestRunMs = Math.max(longestRunMs, now - started)
    if (now - started >= SYNC_TIMEOUT_MS) throw new Error(`A run took ${now - started} ms`)
    return result
  }

  // A full reconciliation from an empty mirror: the schedule's runs, a minute apart.
  const start = now
  let runs = 0
  let mirrored = 0
  for (;;) {
    now = start + runs * MINUTE
    runs += 1
    mirrored += (await invoke(scheduledEvent)).written
    if ((await state.get()).cursor === undefined) break
    if (runs > 100) throw new Error('The rotation did not end in 100 runs')
  }
  const fullReconciliationMs = now - start
  const { Item: syncItem } = await dynamo.documentClient.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY_MIRROR_TABLE.partitionKey]: KEY_MIRROR_TABLE.syncStateKey },
      ConsistentRead: true,
    }),
  )

  // A key attached in the console to a plan in the middle, announced by its event.
  const middle = planId(Math.floor(plans / 2))
  const attach = (id: string): KeySyncEvent => {
    gateway.addKey(id, middle)
    return {
      ...scheduledEvent,
      'detail-type': 'AWS API Call via CloudTrail',
      source: 'aws.apigateway',
      detail: {
        eventName: 'CreateUsagePlanKey',
        requestParameters: {
          usagePlanId: middle,
          createUsagePlanKeyInput: { keyId: id, keyType: 'API_KEY' },
        },
      },
    }
  }
  const inForceSince = async (id: string, since: number) =>
    (await mirror.get(hashApiKey(keyValueOf(id)), { consistent: true })) ? now - since : Number.NaN

  now += 10 * MINUTE
  const idleAt = now
  await invoke(attach('keyidle'))
  const changeIdleMs = await inForceSince('keyidle', idleAt)

  // The event arrives while a scheduled run reads: its own run finds the lease taken.
  now += 10 * MINUTE
  let eventAt = 0
  let eventRun: Promise<KeySyncResult> | undefined
  const send = gateway.client.send.bind(gateway.client)
  let calls = 0
  gateway.client.send = (async (command: never) => {
    calls += 1
    if (calls === 3 && !eventRun) {
      eventAt = now
      eventRun = invoke(attach('keybusy'))
      await eventRun
    }
    return send(command)
  }) as typeof gateway.client.send
  await invoke(scheduledEvent)
  gateway.client.send = send
  const changeMidRunMs = await inForceSince('keybusy', eventAt)

  return {
    plans,
    keys,
    runs,
    fullReconciliationMs,
    mirrored,
    longestRunMs,
    leaseKept: syncItem?.leaseOwner !== undefined,
    changeIdleMs,
    changeMidRunMs,
  }
}
