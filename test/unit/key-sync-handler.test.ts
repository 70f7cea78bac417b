import type { Context } from 'aws-lambda'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import type { KeySource, KeySourceSnapshot } from '#functions/key-sync/api-gateway-key-source.ts'
import {
  createKeySyncHandler,
  type KeySyncEvent,
  type MetricSink,
  MIN_EVENT_INTERVAL_MS,
} from '#functions/key-sync/key-sync-handler.ts'
import type { ReplaceAllResult } from '#shared/data/key-mirror-repository.ts'
import type { KeyMirrorEntry, KeyMirrorItem } from '#shared/data/key-mirror-schema.ts'
import { hashApiKey } from '#shared/data/key-mirror-schema.ts'
import { KEY_SYNC_METRICS } from '#shared/observability/metrics.ts'
import { lambdaContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const entry = (keyId: string): KeyMirrorEntry => ({
  keyHash: hashApiKey(`${keyId}-value-0123456789abcdef`),
  keyId,
  enabled: true,
  plan: 'pro',
  perMinute: 300,
  perDay: 10_000,
  usagePlanId: 'plan-pro',
})

const snapshotOf = (entries: KeyMirrorEntry[], extra: Partial<KeySourceSnapshot> = {}) => ({
  entries,
  stagePlans: 1,
  refusedPlans: [],
  refusedKeyIds: [],
  disabledKeys: 0,
  managementCalls: 3,
  ...extra,
})

/** An in-memory mirror with the repository's replaceAll semantics. */
class MemoryMirror {
  readonly items = new Map<string, KeyMirrorItem>()
  failure: Error | undefined

  async replaceAll(entries: KeyMirrorEntry[], syncedAt: string): Promise<ReplaceAllResult> {
    if (this.failure) throw this.failure
    const wanted = new Set(entries.map((e) => e.keyHash))
    const stale = [...this.items.keys()].filter((hash) => !wanted.has(hash))
    for (const e of entries) this.items.set(e.keyHash, { ...e, syncedAt })
    for (const hash of stale) this.items.delete(hash)
    return { upserted: entries.length, written: entries.length, deleted: stale.length }
  }
}

const scheduled = scheduledEvent
const managementEvent: KeySyncEvent = {
  ...scheduled,
  'detail-type': 'AWS API Call via CloudTrail',
  source: 'aws.apigateway',
  detail: { eventName: 'CreateUsagePlanKey', requestParameters: { secret: 'not-to-be-logged' } },
}

let nowMs: number
let current: KeySourceSnapshot | Error
let mirror: MemoryMirror
let logger: ReturnType<typeof fakeLogger>
let metrics: { addMetric: ReturnType<typeof vi.fn<MetricSink['addMetric']>> }
let context: Context

const source: KeySource = {
  read: async () => {
    if (current instanceof Error) throw current
    return current
  },
}

const handlerOf = () =>
  createKeySyncHandler({ source, mirror, logger, metrics, clock: () => nowMs })

const metricValues = () =>
  Object.fromEntries(metrics.addMetric.mock.calls.map(([name, , value]) => [name, value]))

beforeEach(() => {
  nowMs = Date.parse('2027-03-05T10:00:00Z')
  mirror = new MemoryMirror()
  logger = fakeLogger()
  metrics = { addMetric: vi.fn<MetricSink['addMetric']>() }
  context = lambdaContext('petstore-key-sync')
})

describe('key-sync handler', () => {
  it('rebuilds the mirror on a scheduled event, stamped with the run start, and counts', async () => {
    current = snapshotOf([entry('key-1'), entry('key-2')])
    const handler = handlerOf()
    await handler(scheduled, context)
    nowMs += 60_000
    current = snapshotOf([entry('key-2'), entry('key-3')])

    const result = await handler(scheduled, context)

    expect(result).toEqual({
      skipped: false,
      upserted: 2,
      written: 2,
      deleted: 1,
      refusedPlans: 0,
      refusedKeys: 0,
      managementCalls: 3,
    })
    expect([...mirror.items.values()].map((item) => [item.keyId, item.syncedAt])).toEqual([
      ['key-2', '2027-03-05T10:01:00.000Z'],
      ['key-3', '2027-03-05T10:01:00.000Z'],
    ])
    expect(logger.info).toHaveBeenLastCalledWith(
      'Key mirror synced',
      expect.objectContaining({ trigger: 'Scheduled Event', upserted: 2, deleted: 1 }),
    )
  })

  it('rebuilds the mirror on an API Gateway management event, logging only its type', async () => {
    current = snapshotOf([entry('key-1')])

    await handlerOf()(managementEvent, context)

    expect([...mirror.items.values()].map((item) => item.keyId)).toEqual(['key-1'])
    expect(JSON.stringify(logger.info.mock.calls)).not.toContain('not-to-be-logged')
  })

  it('emits the sync metrics', async () => {
    current = snapshotOf([entry('key-1')], {
      refusedPlans: [{ usagePlanId: 'plan-x', reason: 'missing tag petstore:plan' }],
      refusedKeyIds: ['key-x1', 'key-x2'],
      managementCalls: 4,
    })

    await handlerOf()(scheduled, context)

    expect(metricValues()).toEqual({
      [KEY_SYNC_METRICS.keysMirrored]: 1,
      [KEY_SYNC_METRICS.keysRemoved]: 0,
      [KEY_SYNC_METRICS.invalidPlans]: 1,
      [KEY_SYNC_METRICS.refusedKeys]: 2,
      [KEY_SYNC_METRICS.managementCalls]: 4,
      [KEY_SYNC_METRICS.failures]: 0,
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

  it('throws on a source failure, counts it and leaves the previous mirror as it was', async () => {
    const handler = handlerOf()
    current = snapshotOf([entry('key-1')])
    await handler(scheduled, context)
    const before = structuredClone([...mirror.items.entries()])
    current = new Error('TooManyRequestsException')
    metrics.addMetric.mockClear()

    await expect(handler(scheduled, context)).rejects.toThrow('TooManyRequestsException')

    expect([...mirror.items.entries()]).toEqual(before)
    expect(metricValues()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
    expect(logger.error).toHaveBeenCalledWith(
      'Key sync failed: the previous mirror stays in place',
      expect.objectContaining({ trigger: 'Scheduled Event' }),
    )
  })

  it('throws on a mirror write failure and counts it', async () => {
    current = snapshotOf([entry('key-1')])
    mirror.failure = new Error('ProvisionedThroughputExceededException')

    await expect(handlerOf()(scheduled, context)).rejects.toThrow('ProvisionedThroughput')
    expect(metricValues()).toEqual({ [KEY_SYNC_METRICS.failures]: 1 })
  })

  it('coalesces management events right after a successful run; the schedule always runs', async () => {
    const handler = handlerOf()
    const read = vi.spyOn(source, 'read')
    current = snapshotOf([entry('key-1')])
    await handler(managementEvent, context)

    nowMs += MIN_EVENT_INTERVAL_MS - 1
    expect(await handler(managementEvent, context)).toMatchObject({ skipped: true })
    expect(await handler(scheduled, context)).toMatchObject({ skipped: false })
    nowMs += MIN_EVENT_INTERVAL_MS
    expect(await handler(managementEvent, context)).toMatchObject({ skipped: false })
    expect(read).toHaveBeenCalledTimes(3)
    read.mockRestore()
  })

  it('does not coalesce an event after a failed run', async () => {
    const handler = handlerOf()
    current = new Error('boom')
    await expect(handler(managementEvent, context)).rejects.toThrow('boom')
    current = snapshotOf([entry('key-1')])
    nowMs += 1_000

    expect(await handler(managementEvent, context)).toMatchObject({ skipped: false, upserted: 1 })
  })
})
