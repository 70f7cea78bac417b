/**
 * How long the key sync takes at AWS's ceilings, on a virtual clock: the real handler, key
 * source, pacer (5 calls/s, burst 10) and mirror and state repositories (on the embedded
 * DynamoDB), against an in-memory API Gateway whose every call takes 100–200 ms of virtual time.
 * For 4, 100, 300 and 1,000 stage plans and 10,000 keys it prints:
 * - a full reconciliation: from an empty mirror, runs once a minute (the schedule) until a run
 *   has read the last plan; how many runs, the time until the mirror is whole, and the longest run;
 * - a change in force: a key attached to a plan in the middle of the rotation, announced by its
 *   CloudTrail event (its delivery delay not counted), with the sync idle, and while a scheduled
 *   run is reading: the time from the event until the key is in the mirror.
 * Every run must end before its 60 s timeout with its lease given up; the bench fails otherwise.
 * DynamoDB calls take real time, not virtual (they are not the bottleneck: milliseconds each).
 * Run: npx tsx bench/key-sync-time-bench.ts [plans...]
 */
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
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import { KeySyncStateRepository } from '#shared/data/key-sync-state-repository.ts'
import { KEY_MIRROR_TABLE } from '#shared/data/table-keys.ts'
import { lambdaContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  keyValueOf,
  planTags,
} from '#test/support/fake-api-gateway.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { createKeyMirrorTable } from '#test/support/key-mirror-table.ts'

const KEYS = 10_000
const TIMEOUT_MS = FUNCTION_TIMEOUT_SECONDS.keySync * 1_000
const MINUTE = 60_000
const LATENCY_MS = { min: 100, max: 200 }

const env = await startDynamoTestEnv()

/** A deterministic 100–200 ms per call. */
const latencies = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return LATENCY_MS.min + (seed % (LATENCY_MS.max - LATENCY_MS.min + 1))
}

const stage = async (plans: number) => {
  let now = Date.parse('2027-03-05T10:00:00Z')
  const clock = () => now
  const sleep = async (ms: number) => {
    now += ms
  }
  const gateway = new FakeApiGateway()
  const planId = (p: number) => `plan${String(p).padStart(4, '0')}`
  for (let p = 0; p < plans; p += 1) gateway.addPlan(planId(p), { tags: planTags('pro') })
  for (let k = 0; k < KEYS; k += 1) gateway.addKey(`key${k}`, planId(k % plans))
  const latency = latencies(plans)
  gateway.client.middlewareStack.add(
    (next) => async (args) => {
      now += latency()
      return next(args)
    },
    { step: 'initialize', name: 'virtualLatency' },
  )
  const tableName = await createKeyMirrorTable(env)
  const mirror = new KeyMirrorRepository({ client: env.documentClient, tableName })
  const state = new KeySyncStateRepository({ client: env.documentClient, tableName })
  const handler = keySyncHandler({
    source: new ApiGatewayKeySource({
      client: gateway.client,
      restApiId: FAKE_API_ID,
      stage: FAKE_STAGE,
      pacer: new TokenBucketPacer({ ...KEY_SYNC_CALL_RATE, clock, sleep }),
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
  /** One invocation as Lambda makes it: the run's remaining time counts down on the clock. */
  const invoke = async (event: KeySyncEvent): Promise<KeySyncResult> => {
    const started = now
    const context: Context = {
      ...lambdaContext('petstore-key-sync'),
      getRemainingTimeInMillis: () => started + TIMEOUT_MS - now,
    }
    const result = await handler(event, context)
    longestRunMs = Math.max(longestRunMs, now - started)
    if (now - started >= TIMEOUT_MS) throw new Error(`A run took ${now - started} ms`)
    return result
  }
  return {
    gateway,
    tableName,
    mirror,
    state,
    invoke,
    planId,
    clock,
    setNow: (at: number) => {
      now = at
    },
    longestRunMs: () => longestRunMs,
  }
}

const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`

const measure = async (plans: number) => {
  const s = await stage(plans)
  // A full reconciliation from an empty mirror: the schedule's runs, a minute apart.
  const start = s.clock()
  let runs = 0
  let runStart = start
  for (;;) {
    runStart = start + runs * MINUTE
    s.setNow(runStart)
    runs += 1
    await s.invoke(scheduledEvent)
    if ((await s.state.get()).cursor === undefined) break
    if (runs > 100) throw new Error('The rotation did not end in 100 runs')
  }
  const fullMs = s.clock() - start
  const { Item: syncItem } = await env.documentClient.send(
    new GetCommand({
      TableName: s.tableName,
      Key: { [KEY_MIRROR_TABLE.partitionKey]: KEY_MIRROR_TABLE.syncStateKey },
      ConsistentRead: true,
    }),
  )
  if (syncItem?.leaseOwner !== undefined) throw new Error('A run kept its lease')

  // A change while idle: attach a new key to a plan in the middle, with its event.
  const middle = s.planId(Math.floor(plans / 2))
  const attach = (id: string) => {
    s.gateway.addKey(id, middle)
    return {
      'detail-type': 'AWS API Call via CloudTrail',
      source: 'aws.apigateway',
      detail: {
        eventName: 'CreateUsagePlanKey',
        requestParameters: {
          usagePlanId: middle,
          createUsagePlanKeyInput: { keyId: id, keyType: 'API_KEY' },
        },
      },
    } as unknown as KeySyncEvent
  }
  s.setNow(runStart + 10 * MINUTE)
  const idleAt = s.clock()
  await s.invoke(attach('keyidle'))
  const idle = (await s.mirror.get(hashApiKey(keyValueOf('keyidle')))) ? s.clock() - idleAt : NaN

  // A change while a scheduled run reads: the event's own run finds the lease taken.
  s.setNow(runStart + 20 * MINUTE)
  let eventAt = 0
  let eventRun: Promise<KeySyncResult> | undefined
  const realSend = s.gateway.client.send.bind(s.gateway.client)
  let calls = 0
  s.gateway.client.send = (async (command: never) => {
    calls += 1
    if (calls === 3 && !eventRun) {
      eventAt = s.clock()
      eventRun = s.invoke(attach('keybusy'))
      await eventRun
    }
    return realSend(command)
  }) as typeof s.gateway.client.send
  await s.invoke(scheduledEvent)
  s.gateway.client.send = realSend
  const busy = (await s.mirror.get(hashApiKey(keyValueOf('keybusy')))) ? s.clock() - eventAt : NaN

  console.log(
    [
      String(plans).padStart(6),
      String(KEYS).padStart(7),
      String(runs).padStart(5),
      seconds(fullMs).padStart(10),
      seconds(s.longestRunMs()).padStart(12),
      seconds(idle).padStart(12),
      seconds(busy).padStart(14),
    ].join(' '),
  )
}

const args = process.argv.slice(2).map(Number).filter(Number.isFinite)
console.log(
  `Key sync on a virtual clock: ${KEYS} keys, ${LATENCY_MS.min}-${LATENCY_MS.max} ms per management call, paced at ${KEY_SYNC_CALL_RATE.perSecond}/s (burst ${KEY_SYNC_CALL_RATE.burst}), runs a minute apart, timeout ${TIMEOUT_MS / 1_000} s`,
)
console.log(' plans    keys  runs  full sync  longest run  change idle  change mid-run')
for (const plans of args.length > 0 ? args : [4, 100, 300, 1_000]) await measure(plans)
await env.close()
