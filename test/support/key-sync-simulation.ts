import { threadId } from 'node:worker_threads'
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import type { Context } from 'aws-lambda'
import { KEY_SYNC_CALL_RATE } from '#functions/key-sync/key-sync-dependencies.ts'
import type { KeySyncEvent } from '#functions/key-sync/key-sync-events.ts'
import { keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { ApiGatewayAuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import { TokenBucketPacer } from '#keys/call-pacer.ts'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import { ensureTable } from '#local/embedded-dynamo.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
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
/** A simulated stage: the real sync over a fake API Gateway on one virtual clock. */
export interface SimulatedKeySync {
  gateway: FakeApiGateway
  mirror: KeyMirrorWriter
  state: KeySyncStateRepository
  tableName: string
  now(): number
  /** Moves the virtual clock on (time passing outside a run). */
  advance(ms: number): void
  /** One invocation as Lambda makes it; throws when a run reaches the timeout. */
  invoke(event: KeySyncEvent): Promise<KeySyncResult>
  /** The longest run so far. */
  longestRunMs(): number
  /** Runs after every management call (a change made while a run reads). */
  onCall: (() => Promise<void>) | undefined
  planId(p: number): string
}

/**
 * The key sync on a virtual clock: the real handler, key source, pacer (5 calls/s, burst 10),
 * mirror and state repositories (on `dynamo`), against an in-memory API Gateway whose every call
 * takes 100–200 ms of virtual time, with `plans` stage plans and `keys` keys (key k on plan
 * k mod plans). Lambda's remaining time counts down on the same clock. DynamoDB calls take real
 * time, not virtual (milliseconds each, not the bottleneck).
 */
export const simulatedKeySync = async (
  dynamo: SimulationDynamo,
  plans: number,
  keys: number,
): Promise<SimulatedKeySync> => {
  let now = Date.parse('2027-03-05T10:00:00Z')
  const clock = () => now
  const gateway = new FakeApiGateway()
  const planId = (p: number) => `plan${String(p).padStart(4, '0')}`
  for (let p = 0; p < plans; p += 1) gateway.addPlan(planId(p), { tags: planTags('pro') })
  for (let k = 0; k < keys; k += 1) gateway.addKey(`key${k}`, planId(k % plans))
  const latency = latencies(plans)()
  const simulation: SimulatedKeySync = {} as SimulatedKeySync
  // aws-sdk-client-mock replaces send(), so no middleware of the client runs: the latency wraps
  // the replaced send itself.
  const send = gateway.client.send.bind(gateway.client)
  gateway.client.send = (async (command: never) => {
    now += latency()
    const answer = await send(command)
    await simulation.onCall?.()
    return answer
  }) as typeof gateway.client.send
  tables += 1
  const tableName = `simulated-key-mirror-${process.pid}-${threadId}-${tables}`
  await ensureTable(dynamo.client, keyMirrorTableDefinition(tableName))
  const mirror = new KeyMirrorWriter({ client: dynamo.documentClient, tableName })
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

  Object.assign(simulation, {
    gateway,
    mirror,
    state,
    tableName,
    now: () => now,
    advance: (ms: number) => {
      now += ms
    },
    invoke,
    longestRunMs: () => longestRunMs,
    onCall: undefined,
    planId,
  })
  return simulation
}

/**
 * A full reconciliation at scale, then a key attached in the console announced by its event, with
 * the sync idle and while a scheduled run reads.
 */
export const simulateKeySyncAtScale = async (
  dynamo: SimulationDynamo,
  plans: number,
  keys: number,
): Promise<KeySyncAtScale> => {
  const sim = await simulatedKeySync(dynamo, plans, keys)
  const { gateway, mirror, invoke, planId } = sim
  // A full reconciliation from an empty mirror: the schedule's runs, a minute apart.
  const start = sim.now()
  let runs = 0
  let mirrored = 0
  for (;;) {
    sim.advance(start + runs * MINUTE - sim.now())
    runs += 1
    mirrored += (await invoke(scheduledEvent)).written
    if ((await sim.state.get()).cursor === undefined) break
    if (runs > 100) throw new Error('The rotation did not end in 100 runs')
  }
  const fullReconciliationMs = sim.now() - start
  const { Item: syncItem } = await dynamo.documentClient.send(
    new GetCommand({
      TableName: sim.tableName,
      Key: { [KEY_MIRROR_TABLE.partitionKey]: KEY_MIRROR_TABLE.syncStateKey },
      ConsistentRead: true,
    }),
  )

  // A key attached in the console to a plan in the middle, announced by its event.
  const middle = planId(Math.floor(plans / 2))
  const attach = (id: string): KeySyncEvent => {
    gateway.addKey(id, middle)
    return managementEvent('CreateUsagePlanKey', {
      usagePlanId: middle,
      createUsagePlanKeyInput: { keyId: id, keyType: 'API_KEY' },
    })
  }
  const inForceSince = async (id: string, since: number) =>
    (await mirror.get(hashApiKey(keyValueOf(id)), { consistent: true }))
      ? sim.now() - since
      : Number.NaN

  sim.advance(10 * MINUTE)
  const idleAt = sim.now()
  await invoke(attach('keyidle'))
  const changeIdleMs = await inForceSince('keyidle', idleAt)

  // The event arrives while a scheduled run reads: its own run finds the lease taken.
  sim.advance(10 * MINUTE)
  let eventAt = 0
  let calls = 0
  sim.onCall = async () => {
    calls += 1
    if (calls === 3) {
      eventAt = sim.now()
      await invoke(attach('keybusy'))
    }
  }
  await invoke(scheduledEvent)
  sim.onCall = undefined
  const changeMidRunMs = await inForceSince('keybusy', eventAt)

  return {
    plans,
    keys,
    runs,
    fullReconciliationMs,
    mirrored,
    longestRunMs: sim.longestRunMs(),
    leaseKept: syncItem?.leaseOwner !== undefined,
    changeIdleMs,
    changeMidRunMs,
  }
}

/** A CloudTrail management event as EventBridge delivers it. */
export const managementEvent = (
  eventName: string,
  requestParameters: Record<string, unknown>,
): KeySyncEvent => ({
  ...scheduledEvent,
  'detail-type': 'AWS API Call via CloudTrail',
  source: 'aws.apigateway',
  detail: { eventName, requestParameters },
})

export interface BacklogOutcome {
  plans: number
  backlog: number
  /** From a console disable (its event a second after the bulk change's) to the key out. */
  revocationMs: number
  /** From the bulk change to no id pending. */
  backlogGoneMs: number
}

/**
 * A script renames `backlog` keys (one UpdateApiKey event each: their ids pending while the
 * first event's run holds the lease), and a second later a key is disabled in the console and its
 * event arrives. Scheduled runs follow a minute apart, for at most `horizonMs`.
 */
export const simulateBacklog = async (
  dynamo: SimulationDynamo,
  plans: number,
  keys: number,
  backlog: number,
  horizonMs = 60 * MINUTE,
): Promise<BacklogOutcome> => {
  const sim = await simulatedKeySync(dynamo, plans, keys)
  for (let run = 0; ; run += 1) {
    await sim.invoke(scheduledEvent)
    if ((await sim.state.get()).cursor === undefined) break
    if (run > 100) throw new Error('The rotation did not end in 100 runs')
    sim.advance(MINUTE)
  }
  sim.advance(10 * MINUTE)
  // Ids as long as API Gateway's; the disabled key's sorts after every renamed one.
  const renamed = Array.from({ length: backlog }, (_, k) => `key${keys - 1 - backlog + k}`)
  const victim = `key${keys - 1}`
  const victimHash = hashApiKey(keyValueOf(victim))
  const update = (apiKey: string) =>
    managementEvent('UpdateApiKey', { apiKey, patchOperations: [{ op: 'replace' }] })
  const changedAt = sim.now()
  await sim.state.addPending(renamed.slice(1), changedAt)
  let revokedAt: number | undefined
  let disabled = false
  sim.onCall = async () => {
    if (!disabled && sim.now() >= changedAt + 1_000) {
      disabled = true
      sim.gateway.setEnabled(victim, false)
      await sim.invoke(update(victim))
    }
    if (disabled && revokedAt === undefined && !(await sim.mirror.get(victimHash))) {
      revokedAt = sim.now()
    }
  }
  let backlogGoneAt: number | undefined
  await sim.invoke(update(renamed[0] as string))
  for (let minute = 1; sim.now() < changedAt + horizonMs; minute += 1) {
    if (backlogGoneAt === undefined && !(await sim.state.get()).pendingIds) {
      backlogGoneAt = sim.now()
    }
    if (revokedAt !== undefined && backlogGoneAt !== undefined) break
    sim.advance(Math.max(0, changedAt + minute * MINUTE - sim.now()))
    await sim.invoke(scheduledEvent)
    if (revokedAt === undefined && !(await sim.mirror.get(victimHash))) revokedAt = sim.now()
  }
  sim.onCall = undefined
  return {
    plans,
    backlog,
    revocationMs: revokedAt === undefined ? Number.NaN : revokedAt - changedAt,
    backlogGoneMs: backlogGoneAt === undefined ? Number.NaN : backlogGoneAt - changedAt,
  }
}
