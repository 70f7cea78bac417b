import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import type { KeySyncEvent } from '#functions/key-sync/key-sync-events.ts'
import { keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import type { MetricSink } from '#functions/key-sync/key-sync-report.ts'
import type { KeySource, KeySourceSnapshot, ReadOptions } from '#keys/api-gateway-key-source.ts'
import {
  type DiffScope,
  type MirrorDiff,
  mirrorDiff,
  type ReplaceAllResult,
} from '#keys/key-mirror-writer.ts'
import type { KeySyncState } from '#keys/key-sync-state-repository.ts'
import type { KeyMirrorEntry, KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const entry = (keyId: string, usagePlanId = 'plan-pro'): KeyMirrorEntry => ({
  keyHash: hashApiKey(`${keyId}-value-0123456789abcdef`),
  keyId,
  enabled: true,
  plan: 'pro',
  perMinute: 300,
  perDay: 10_000,
  usagePlanId,
})

const snapshotOf = (
  entries: KeyMirrorEntry[],
  extra: Partial<KeySourceSnapshot> = {},
): KeySourceSnapshot => ({
  entries,
  plansRead: ['plan-pro'],
  validPlans: new Map([['plan-pro', { plan: 'pro', limits: { perMinute: 300, perDay: 10_000 } }]]),
  complete: true,
  cursor: undefined,
  rotationDone: true,
  namedRead: [],
  toRotation: [],
  failedPlans: [],
  namedFailed: [],
  keys: new Map(),
  stagePlans: 1,
  refusedPlans: [],
  refusedKeyIds: [],
  disabledKeys: 0,
  deletedKeyIds: [],
  managementCalls: 3,
  stageIds: ['plan-pro', ...entries.map((e) => e.keyId)].sort(),
  ...extra,
})

/** The mirror's items in memory; which keys are changed or stale is the repository's own rule. */
class MemoryMirror {
  readonly items = new Map<string, KeyMirrorItem>()
  failure: Error | undefined

  async diff(entries: KeyMirrorEntry[], scope?: DiffScope): Promise<MirrorDiff> {
    return mirrorDiff(
      entries,
      async () => this.items as ReadonlyMap<string, Record<string, unknown>>,
      scope,
    )
  }

  async apply(
    diff: Pick<MirrorDiff, 'entries' | 'changed' | 'stale'>,
    syncedAt: string,
    { remove = diff.stale }: { remove?: readonly string[] } = {},
  ): Promise<ReplaceAllResult> {
    if (this.failure) throw this.failure
    for (const e of diff.changed) this.items.set(e.keyHash, { ...e, syncedAt })
    const removed = remove
    for (const hash of removed) this.items.delete(hash)
    return { upserted: diff.entries.length, written: diff.changed.length, deleted: removed.length }
  }
}

/** The state item, its lease and its pending ids, in memory. */
class MemoryState {
  saved: KeySyncState = {}
  leaseOwner: string | undefined
  readonly pending = new Set<string>()
  reads = 0

  #withPending(): KeySyncState {
    const state = structuredClone(this.saved)
    delete state.pendingIds
    return this.pending.size > 0 ? { ...state, pendingIds: [...this.pending].sort() } : state
  }
  async get() {
    this.reads += 1
    return this.#withPending()
  }
  async addPending(ids: readonly string[]) {
    for (const id of ids) this.pending.add(id)
  }
  async acquire(owner: string) {
    if (this.leaseOwner) return undefined
    this.leaseOwner = owner
    return this.#withPending()
  }
  async complete(owner: string, next: KeySyncState) {
    if (owner !== this.leaseOwner) throw new Error('lease lost')
    for (const id of next.pendingIds ?? []) this.pending.delete(id)
    this.saved = structuredClone({ ...next, pendingIds: undefined })
    this.leaseOwner = undefined
  }
  async release(owner: string) {
    if (owner === this.leaseOwner) this.leaseOwner = undefined
  }
}

const managementEvent = (eventName: string, requestParameters: unknown): KeySyncEvent => ({
  ...scheduledEvent,
  'detail-type': 'AWS API Call via CloudTrail',
  source: 'aws.apigateway',
  detail: { eventName, requestParameters },
})

const customResourceEvent = (
  RequestType: 'Create' | 'Update' | 'Delete',
): CloudFormationCustomResourceEvent =>
  ({
    RequestType,
    ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:key-sync',
    ResponseURL: 'https://cloudformation-custom-resource-response.example/presigned',
    StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/petstore-production-api/1',
    RequestId: 'request-1',
    LogicalResourceId: 'KeySyncOnDeploy',
    ResourceType: 'Custom::KeySync',
    ResourceProperties: { ServiceToken: 'arn' },
    ...(RequestType === 'Create' ? {} : { PhysicalResourceId: 'petstore-key-sync-on-deploy' }),
  }) as CloudFormationCustomResourceEvent

let nowMs: number
let current: KeySourceSnapshot | Error
let mirror: MemoryMirror
let state: MemoryState
let flushes: number
let flushFailure: Error | undefined
let responses: { url: string; body: Record<string, unknown> }[]
let readOptions: ReadOptions[]
/** Called during a read, as if something happened while the run read API Gateway. */
let duringRead: (() => Promise<void>) | undefined
let logger: ReturnType<typeof fakeLogger>
let metrics: { addMetric: ReturnType<typeof vi.fn<MetricSink['addMetric']>> }
let context: Context
let reads: number

const source: KeySource = {
  read: async (options = {}) => {
    reads += 1
    readOptions.push(options)
    const during = duringRead
    duringRead = undefined
    await during?.()
    if (current instanceof Error) throw current
    // The named ids are read (a read that runs out of time leaves some: see the source's tests).
    return { ...current, namedRead: [...(options.priorityIds ?? [])] }
  },
}

const handlerOf = () =>
  keySyncHandler({
    source,
    mirror,
    state,
    flusher: {
      flush: async () => {
        if (flushFailure) throw flushFailure
        flushes += 1
      },
    },
    logger,
    metrics,
    clock: () => nowMs,
    sendResponse: async (url, body) => {
      responses.push({ url, body: JSON.parse(body) })
    },
  })

const metricValues = () =>
  Object.fromEntries(metrics.addMetric.mock.calls.map(([name, , value]) => [name, value]))

beforeEach(() => {
  nowMs = Date.parse('2027-03-05T10:00:00Z')
  mirror = new MemoryMirror()
  state = new MemoryState()
  flushes = 0
  flushFailure = undefined
  responses = []
  readOptions = []
  duringRead = undefined
  reads = 0
  logger = fakeLogger()
  metrics = { addMetric: vi.fn<MetricSink['addMetric']>() }
  // The key-sync function's 60 s, as Lambda reports them at the start of a run.
  context = keySyncContext()
})

describe('key-sync handler', () => {
  it('rebuilds the mirror on a scheduled event, stamped with the run start, and counts', async () => {
    current = snapshotOf([entry('key-1'), entry('key-2')])
    const handler = handlerOf()
    await handler(scheduledEvent, context)
    nowMs += 60_000
    current = snapshotOf([entry('key-2'), entry('key-3')])

    const result = await handler(scheduledEvent, context)

    expect(result).toEqual({
      skipped: false,
      upserted: 2,
      written: 1,
      deleted: 1,
      heldRemovals: 0,
      cacheFlushed: true,
      refusedPlans: 0,
      refusedKeys: 0,
      managementCalls: 3,
      plansRead: 1,
      complete: true,
    })
    expect([...mirror.items.values()].map((item) => [item.keyId, item.syncedAt])).toEqual([
      ['key-2', '2027-03-05T10:00:00.000Z'],
      ['key-3', '2027-03-05T10:01:00.000Z'],
    ])
    expect(state.saved).toMatchObject({
      lastSuccessAt: nowMs,
      // Flushed, and to be flushed once more by the next run.
      flushPending: true,
      stageIds: ['key-2', 'key-3', 'plan-pro'],
    })
    expect(state.leaseOwner).toBeUndefined()
  })

  it('flushes the authorizer cache after a run that changed the mirror and on the run after, only then', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    await handler(scheduledEvent, context)
    expect(flushes).toBe(1)
    // A decision cached from a read made just before the writes is dropped by the next run.
    expect(await handler(scheduledEvent, context)).toMatchObject({ cacheFlushed: true })
    expect(flushes).toBe(2)
    expect(await handler(scheduledEvent, context)).toMatchObject({ cacheFlushed: false })
    expect(flushes).toBe(2)
    current = snapshotOf([])
    expect(await handler(scheduledEvent, context)).toMatchObject({ deleted: 1, cacheFlushed: true })
    expect(flushes).toBe(3)
  })

  it('retries a failed flush on the next run, even one that changes nothing', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    flushFailure = new Error('TooManyRequestsException')
    expect(await handler(scheduledEvent, context)).toMatchObject({
      written: 1,
      cacheFlushed: false,
    })
    expect(metricValues()).toMatchObject({
      [KEY_SYNC_METRICS.cacheFlushFailures]: 1,
      [KEY_SYNC_METRICS.succeeded]: 1,
    })
    expect(state.saved).toMatchObject({ flushPending: true })

    flushFailure = undefined
    expect(await handler(scheduledEvent, context)).toMatchObject({ written: 0, cacheFlushed: true })
    expect(flushes).toBe(1)
    expect(state.saved).toMatchObject({ flushPending: false })
  })

  it('emits the sync metrics, a success among them', async () => {
    current = snapshotOf([entry('key-1')], {
      refusedPlans: [{ usagePlanId: 'plan-x', reason: 'missing tag petstore:plan' }],
      refusedKeyIds: ['key-x1', 'key-x2'],
      managementCalls: 4,
    })

    await handlerOf()(scheduledEvent, context)

    expect(metricValues()).toEqual({
      [KEY_SYNC_METRICS.keysMirrored]: 1,
      [KEY_SYNC_METRICS.keysRemoved]: 0,
      [KEY_SYNC_METRICS.removalsHeld]: 0,
      [KEY_SYNC_METRICS.invalidPlans]: 1,
      [KEY_SYNC_METRICS.plansLost]: 0,
      [KEY_SYNC_METRICS.unreadPlans]: 0,
      [KEY_SYNC_METRICS.refusedKeys]: 2,
      [KEY_SYNC_METRICS.managementCalls]: 4,
      [KEY_SYNC_METRICS.rotationAge]: 0,
      [KEY_SYNC_METRICS.failures]: 0,
      [KEY_SYNC_METRICS.succeeded]: 1,
    })
    expect(logger.error).toHaveBeenCalledWith('Usage plan refused: its keys get 401', {
      usagePlanId: 'plan-x',
      reason: 'missing tag petstore:plan',
    })
    expect(logger.warn).toHaveBeenCalledWith(
      'Keys refused for their plan tags',
      expect.objectContaining({ count: 2, keyIds: ['key-x1', 'key-x2'] }),
    )
  })

  it('throws on a source failure, counts it, gives the lease up and leaves the mirror alone', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    await handler(scheduledEvent, context)
    const before = structuredClone([...mirror.items.entries()])
    current = new Error('TooManyRequestsException')
    metrics.addMetric.mockClear()

    await expect(handler(scheduledEvent, context)).rejects.toThrow('TooManyRequestsException')

    expect([...mirror.items.entries()]).toEqual(before)
    expect(metricValues()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
    expect(state.leaseOwner).toBeUndefined()
    expect(logger.error).toHaveBeenCalledWith(
      'Key sync failed: the previous mirror stays in place',
      expect.objectContaining({ trigger: 'Scheduled Event' }),
    )
  })

  it('throws on a mirror write failure and counts it', async () => {
    current = snapshotOf([entry('key-1')])
    mirror.failure = new Error('ProvisionedThroughputExceededException')

    await expect(handlerOf()(scheduledEvent, context)).rejects.toThrow('ProvisionedThroughput')
    expect(metricValues()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
  })

  it('runs one sync at a time: a run that finds the lease taken reads nothing', async () => {
    current = snapshotOf([entry('key-1')])
    state.leaseOwner = 'another-run'

    expect(await handlerOf()(scheduledEvent, context)).toMatchObject({ skipped: 'lease-held' })
    expect(reads).toBe(0)
    expect(mirror.items.size).toBe(0)
  })

  it('holds a mass removal, alarms on it, and applies it when an operator names every key', async () => {
    const handler = handlerOf()
    const keys = Array.from({ length: 12 }, (_, n) => entry(`key-${String(n).padStart(2, '0')}`))
    current = snapshotOf(keys)
    await handler(scheduledEvent, context)
    current = snapshotOf(keys.slice(0, 4))
    metrics.addMetric.mockClear()

    expect(await handler(scheduledEvent, context)).toMatchObject({ deleted: 0, heldRemovals: 8 })
    expect(mirror.items.size).toBe(12)
    expect(metricValues()).toMatchObject({ [KEY_SYNC_METRICS.removalsHeld]: 8 })
    const removedIds = keys.slice(4).map(({ keyId }) => keyId)
    expect(logger.error).toHaveBeenCalledWith(
      'Key sync withheld a removal: confirm it or wait for runs to agree',
      expect.objectContaining({
        group: '*',
        cause: 'mirror',
        removals: 8,
        confirm: { confirmRemovals: removedIds },
      }),
    )

    // A count, or a list lacking a key it was shown, confirms nothing.
    expect(await handler({ confirmRemovals: 8 } as never, context)).toMatchObject({ deleted: 0 })
    expect(await handler({ confirmRemovals: removedIds.slice(1) }, context)).toMatchObject({
      deleted: 0,
    })
    expect(await handler({ confirmRemovals: removedIds }, context)).toMatchObject({
      deleted: 8,
      heldRemovals: 0,
    })
    expect(mirror.items.size).toBe(4)
    expect(state.saved.heldRemovals).toBeUndefined()
  })

  it('reads again, before it returns, what an event named while it was reading', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    let during: unknown
    duringRead = async () => {
      // A key attached while the run reads: its event's run finds the lease taken.
      during = await handler(
        managementEvent('CreateUsagePlanKey', {
          usagePlanId: 'planpro001',
          createUsagePlanKeyInput: { keyId: 'key2abcdef', keyType: 'API_KEY' },
        }),
        context,
      )
    }

    const result = await handler(scheduledEvent, context)

    expect(during).toMatchObject({ skipped: 'lease-held' })
    expect(result).toMatchObject({ skipped: false })
    expect(readOptions).toEqual([
      expect.objectContaining({ priorityIds: [] }),
      expect.objectContaining({ priorityIds: ['key2abcdef', 'planpro001'], onlyNamed: true }),
    ])
    expect(state.pending.size).toBe(0)
  })

  it('takes the lease again for ids named after its last look, while its budget lasts', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    // Named after the run's last look at the pending ids, before it gave the lease up.
    const complete = state.complete.bind(state)
    let once = true
    state.complete = async (owner, next) => {
      if (once) await state.addPending(['late1abcde'])
      once = false
      return complete(owner, next)
    }

    await handler(scheduledEvent, context)

    expect(readOptions).toHaveLength(2)
    expect(readOptions[1]).toMatchObject({ priorityIds: ['late1abcde'] })
    expect(state.pending.size).toBe(0)
  })

  it('reads plans for a bounded time and keeps a reserve before the function times out', async () => {
    current = snapshotOf([entry('key-1')])
    await handlerOf()(scheduledEvent, {
      ...context,
      getRemainingTimeInMillis: () => 60_000,
    })
    expect(readOptions[0]?.deadlineMs).toBe(nowMs + 30_000)
    readOptions = []
    await handlerOf()(scheduledEvent, { ...context, getRemainingTimeInMillis: () => 20_000 })
    expect(readOptions[0]?.deadlineMs).toBe(nowMs + 5_000)
  })

  it('leaves the rotation as it was after a run that read only what an event named', async () => {
    state.saved = { lastCompleteAt: nowMs - 600_000 }
    current = snapshotOf([entry('key-1')], { complete: false, rotationDone: false })
    await handlerOf()(managementEvent('UpdateUsagePlan', { usagePlanId: 'planpro001' }), context)
    expect(readOptions[0]).toMatchObject({ onlyNamed: true, priorityIds: ['planpro001'] })
    expect(state.saved.lastCompleteAt).toBe(nowMs - 600_000)
  })

  it('goes on with the rotation where the last run stopped', async () => {
    current = snapshotOf([entry('key-1')], {
      complete: false,
      cursor: 'plan-pro',
      rotationDone: false,
    })
    const handler = handlerOf()
    await handler(scheduledEvent, context)
    expect(state.saved.cursor).toBe('plan-pro')
    current = snapshotOf([entry('key-1')])
    await handler(scheduledEvent, context)
    expect(readOptions[1]).toMatchObject({ cursor: 'plan-pro' })
    expect(state.saved.cursor).toBeUndefined()
    expect(state.saved.lastCompleteAt).toBe(nowMs)
  })

  it("skips another stage's key and plan changes, never its own, logging only the type", async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    await handler(scheduledEvent, context)
    const later = () => {
      nowMs += 1_000
    }

    later()
    const staging = managementEvent('CreateUsagePlanKey', {
      usagePlanId: 'plan-staging-pro',
      createUsagePlanKeyInput: { keyId: 'key-9', keyType: 'API_KEY' },
    })
    expect(await handler(staging, context)).toMatchObject({ skipped: 'other-stage' })
    later()
    expect(
      await handler(managementEvent('UpdateApiKey', { apiKey: 'key-elsewhere' }), context),
    ).toMatchObject({ skipped: 'other-stage' })
    later()
    const ours = managementEvent('CreateUsagePlanKey', {
      usagePlanId: 'plan-pro',
      createUsagePlanKeyInput: { keyId: 'key-2', secret: 'not-to-be-logged' },
    })
    expect(await handler(ours, context)).toMatchObject({ skipped: false })
    later()
    expect(
      await handler(managementEvent('DeleteApiKey', { apiKey: 'key-1' }), context),
    ).toMatchObject({ skipped: false })
    later()
    // A new plan may be attached to any stage: always synced.
    expect(
      await handler(managementEvent('UpdateUsagePlan', { usagePlanId: 'plan-new' }), context),
    ).toMatchObject({ skipped: false })
    expect(JSON.stringify(logger.info.mock.calls)).not.toContain('not-to-be-logged')
  })

  it('syncs every management event before the first sync recorded the stage ids', async () => {
    current = snapshotOf([entry('key-1')])
    const event = managementEvent('UpdateApiKey', { apiKey: 'key-unknown' })
    expect(await handlerOf()(event, context)).toMatchObject({ skipped: false, upserted: 1 })
  })
})

describe('key-sync handler as the deploy custom resource', () => {
  it('answers CloudFormation SUCCESS on Create and Update, then syncs', async () => {
    current = snapshotOf([entry('key-1')])
    const handler = handlerOf()
    for (const type of ['Create', 'Update'] as const) {
      await handler(customResourceEvent(type), context)
    }
    expect(mirror.items.size).toBe(1)
    expect(reads).toBe(2)
    expect(responses).toHaveLength(2)
    expect(responses[0]).toEqual({
      url: 'https://cloudformation-custom-resource-response.example/presigned',
      body: {
        Status: 'SUCCESS',
        Reason: 'SUCCESS',
        PhysicalResourceId: 'petstore-key-sync-on-deploy',
        StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/petstore-production-api/1',
        RequestId: 'request-1',
        LogicalResourceId: 'KeySyncOnDeploy',
      },
    })
  })

  it('answers Delete without syncing', async () => {
    current = snapshotOf([entry('key-1')])
    await handlerOf()(customResourceEvent('Delete'), context)
    expect(reads).toBe(0)
    expect(responses.map((r) => r.body.Status)).toEqual(['SUCCESS'])
  })

  it('answers SUCCESS before it syncs: a failing sync fails the run, never the deploy', async () => {
    current = new Error('AccessDeniedException: not authorized to perform apigateway:GET')
    await expect(handlerOf()(customResourceEvent('Create'), context)).rejects.toThrow(
      'AccessDeniedException',
    )
    expect(responses.map((r) => r.body.Status)).toEqual(['SUCCESS'])
    expect(metricValues()).toMatchObject({ [KEY_SYNC_METRICS.failures]: 1 })
  })

  it("answers at once while a run is in progress, leaving the template's plans to it", async () => {
    current = snapshotOf([entry('key-1')])
    state.leaseOwner = 'scheduled-run'
    const event = customResourceEvent('Update')
    event.ResourceProperties.UsagePlanIds = ['planfree01', 'planpro002']
    expect(await handlerOf()(event, context)).toMatchObject({ skipped: 'lease-held' })
    expect(responses.map((r) => r.body.Status)).toEqual(['SUCCESS'])
    expect(reads).toBe(0)
    expect([...state.pending]).toEqual(['planfree01', 'planpro002'])
  })
})
