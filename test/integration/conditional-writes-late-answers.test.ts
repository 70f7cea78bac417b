import { randomUUID } from 'node:crypto'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { KeyUsageRepository } from '#keys/key-usage-repository.ts'
import { StoreKeyRepository } from '#keys/store-key-repository.ts'
import { ensureTable } from '#local/embedded-dynamo.ts'
import {
  createDocumentClient,
  DYNAMO_CLIENT_LIMITS,
  dynamoConfigFromEnv,
} from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { petTableDefinition } from '#shared/data/table-keys.ts'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'
import { SUSPENSION_MS, utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  AmbiguousWriteError,
  ATTRIBUTES,
  DynamoRateLimiter,
  dayItemKey,
  minuteAttribute,
  numberOf,
  rejectedAttribute,
} from '#shared/rate-limit/rate-limiter.ts'
import { keySyncContext, scheduledEvent } from '#test/support/api-gateway-events.ts'
import { storedPetsNamed } from '#test/support/create-pet-requests.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { FakeApiGateway, keyValueOf, planTags } from '#test/support/fake-api-gateway.ts'
import { type FaultProxy, type FaultRule, startFaultProxy } from '#test/support/fault-proxy.ts'
import { createStoreKeyTable } from '#test/support/key-mirror-table.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'

/**
 * Every conditional write of the project (docs/reliability.md, "Conditional writes and late
 * answers") when its own first attempt was applied but answered late: a real HTTP proxy in front
 * of the test DynamoDB applies the write at once and holds DynamoDB's answer past the SDK's request
 * timeout (the deployed limits: 1 s per attempt, 2 attempts), so the SDK sends the same write
 * again, which then meets its own first attempt. Each test names the outcome the write must have.
 * The tests run side by side, each with a proxy of its own: most of their time is the wait.
 */
/**
 * The SDK as deployed (its retry strategy, 2 attempts), but 2 s per attempt rather than 1: the
 * answers the proxy holds are the only late ones, even when a loaded machine makes a healthy call
 * take over a second (a second timeout would be a second fault, not this one).
 */
const LIMITS = { ...DYNAMO_CLIENT_LIMITS, connectionTimeoutMs: 1_000, requestTimeoutMs: 2_000 }
const LATE_MS = LIMITS.requestTimeoutMs + 500

// All at once: each test mostly waits out a held answer.
vi.setConfig({ maxConcurrency: 20 })

let env: DynamoTestEnv
const proxies: FaultProxy[] = []
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()))
  await env?.close()
  vi.resetConfig()
})

/** A document client with the deployed limits, through a proxy of its own answering `rule` late. */
const latent = async (rule: Omit<FaultRule, 'kind' | 'times'>) => {
  const proxy = await startFaultProxy(env.endpoint)
  proxies.push(proxy)
  const client = createDocumentClient({
    ...dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: proxy.endpoint }, LIMITS),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const arm = () => proxy.setRule({ ...rule, kind: 'late-answer', times: 1, delayMs: LATE_MS })
  return { proxy, client, arm }
}

const keyOf = (body: string, name: string) => body.includes(name)

// Every describe below runs side by side with the others.
describe.concurrent('conditional writes answered late', () => {
  describe('the key sync state item (keys/key-sync-state-repository.ts)', () => {
    const KEYS = ['key-1', 'key-2', 'key-3']
    const syncOn = async (rule: Omit<FaultRule, 'kind' | 'times'>) => {
      const gateway = new FakeApiGateway()
      gateway.addPlan('plan-pro', { tags: planTags('pro') })
      for (const id of KEYS) gateway.addKey(id, 'plan-pro')
      const { proxy, client, arm } = await latent(rule)
      const sync = await createKeySyncHarness({ env, gateway, clock: () => Date.now(), client })
      const run = () => sync.handler(scheduledEvent, keySyncContext())
      const mirrored = async () =>
        (await Promise.all(KEYS.map((id) => sync.mirror.get(hashApiKey(keyValueOf(id)))))).filter(
          Boolean,
        ).length
      return { gateway, proxy, sync, run, arm, mirrored }
    }

    it('acquire: a run whose lease write was answered late holds its own lease and runs', async () => {
      const { proxy, sync, run, arm, mirrored } = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'attribute_not_exists(leaseExpiresAt)'),
      })
      arm()
      const result = await run()
      expect(proxy.injected.get('late-answer')).toBe(1)
      expect(proxy.matched()).toBe(2)
      expect(result).toMatchObject({ skipped: false, upserted: KEYS.length })
      expect(await mirrored()).toBe(KEYS.length)
      // Given up by the run itself: the next run is not skipped for 90 s.
      expect(await run()).toMatchObject({ skipped: false })
      expect(await sync.state.get()).toMatchObject({ lastSuccessAt: expect.any(Number) })
    })

    it('complete: a run whose state save was answered late has succeeded, and left no lease', async () => {
      const { proxy, sync, run, arm, mirrored } = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'lastSuccessAt = :lastSuccessAt'),
      })
      const before = Date.now()
      arm()
      expect(await run()).toMatchObject({ skipped: false, upserted: KEYS.length })
      expect(proxy.matched()).toBe(2)
      expect(await mirrored()).toBe(KEYS.length)
      expect((await sync.state.get()).lastSuccessAt).toBeGreaterThanOrEqual(before)
      expect(await run()).toMatchObject({ skipped: false })
    })

    /** A sync whose plan lost its tag: its keys held, the state save answered late when armed. */
    const heldSync = async () => {
      const sync = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'lastSuccessAt = :lastSuccessAt'),
      })
      expect(await sync.run()).toMatchObject({ upserted: KEYS.length })
      sync.gateway.addPlan('plan-pro', {})
      return sync
    }

    it('held removals: a hold saved with a late answer is held, and listed', async () => {
      const { proxy, sync, run, arm, mirrored } = await heldSync()
      arm()
      expect(await run()).toMatchObject({ skipped: false, deleted: 0 })
      expect(proxy.matched()).toBe(2)
      const held = (await sync.state.get()).heldRemovals ?? {}
      expect(held['plan-pro']).toMatchObject({ count: KEYS.length, keyIds: KEYS })
      expect(await mirrored()).toBe(KEYS.length)
    })

    it('held removals: a confirmation saved with a late answer is applied, the hold gone', async () => {
      const { proxy, sync, run, arm, mirrored } = await heldSync()
      expect(await run()).toMatchObject({ deleted: 0 })
      arm()
      const confirmed = await sync.handler({ confirmRemovals: KEYS }, keySyncContext())
      expect(confirmed).toMatchObject({ skipped: false, deleted: KEYS.length })
      expect(proxy.matched()).toBe(2)
      expect((await sync.state.get()).heldRemovals).toBeUndefined()
      expect(await mirrored()).toBe(0)
    })

    it('release: a failed run whose lease release was answered late leaves no lease', async () => {
      const { gateway, proxy, run, arm } = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'REMOVE leaseOwner') && keyOf(body, 'leaseOwner = :owner'),
      })
      gateway.failure = new Error('the management API is down')
      arm()
      await expect(run()).rejects.toThrow('the management API is down')
      expect(proxy.matched()).toBe(2)
      gateway.failure = undefined
      expect(await run()).toMatchObject({ skipped: false, upserted: KEYS.length })
    })

    it('addPending: ids an event names, recorded once however often the write is sent', async () => {
      const { proxy, sync, arm } = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'ADD pendingIds'),
      })
      arm()
      await sync.state.addPending(['key-1', 'plan-pro'], 1_000)
      expect(proxy.matched()).toBe(2)
      expect(await sync.state.get()).toMatchObject({
        pendingIds: ['key-1', 'plan-pro'],
        pendingNamedAt: { 'key-1': [1_000], 'plan-pro': [1_000] },
      })
    })

    it('breakLease: a lease broken by a late-answered write is gone', async () => {
      const { proxy, sync, arm } = await syncOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'attribute_exists(leaseOwner)'),
      })
      expect(await sync.state.acquire('left-by-a-killed-server', Date.now(), 90_000)).toBeDefined()
      arm()
      await sync.state.breakLease()
      expect(proxy.matched()).toBe(2)
      expect(await sync.state.acquire('next-run', Date.now(), 90_000)).toBeDefined()
    })
  })

  describe('idempotency records (shared/data/idempotency-repository.ts)', () => {
    const NOW = Date.parse('2026-11-22T12:00:00Z')
    const request = (petId: number) => ({
      scope: 'k1a2b3c4d5',
      idempotencyKey: randomUUID(),
      requestHash: 'a'.repeat(64),
      petId,
      leaseMs: 5_000,
    })
    const records = async (rule: Omit<FaultRule, 'kind' | 'times'>, clock = () => NOW) => {
      const { proxy, client, arm } = await latent(rule)
      const repository = new IdempotencyRepository({
        client,
        tableName: env.idempotencyTable,
        clock,
      })
      return { proxy, repository, arm }
    }
    const table = (body: string) => keyOf(body, env.idempotencyTable)

    it('claim: a claim answered late is this request’s own, not another’s in flight', async () => {
      const { proxy, repository, arm } = await records({
        operation: 'PutItem',
        matches: table,
      })
      arm()
      const claim = await repository.claim(request(7))
      expect(proxy.matched()).toBeGreaterThanOrEqual(2)
      expect(claim).toMatchObject({ kind: 'claimed', petId: 7, takeover: false })
    })

    it('takeover: taking over a dead attempt, answered late, is this request’s, not a 409', async () => {
      let now = NOW
      const { proxy, repository, arm } = await records(
        { operation: 'UpdateItem', matches: (body) => table(body) && keyOf(body, ':oldLease') },
        () => now,
      )
      const first = request(8)
      expect(await repository.claim(first)).toMatchObject({ kind: 'claimed' })
      // The first attempt died: its lease runs out, and the client's retry takes its record over.
      now += first.leaseMs + 1
      arm()
      const retry = await repository.claim({ ...first, petId: 9 })
      expect(proxy.matched()).toBe(2)
      expect(retry).toMatchObject({ kind: 'claimed', petId: 8, takeover: true })
    })

    it('complete: an answer saved late is saved, and replayed', async () => {
      const { proxy, repository, arm } = await records({
        operation: 'UpdateItem',
        matches: (body) => table(body) && keyOf(body, ':completed'),
      })
      const first = request(10)
      const claim = await repository.claim(first)
      if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`)
      arm()
      await repository.complete(claim.recordKey, 10, '{"id":10}')
      expect(proxy.matched()).toBe(2)
      expect(await repository.claim({ ...first, petId: 11 })).toEqual({
        kind: 'replay',
        petId: 10,
        response: '{"id":10}',
      })
    })

    it('release: a lease ended late is ended: the retry takes over at once', async () => {
      const { proxy, repository, arm } = await records({
        operation: 'UpdateItem',
        matches: (body) => table(body) && keyOf(body, ':zero'),
      })
      const first = request(12)
      const claim = await repository.claim(first)
      if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`)
      arm()
      await repository.release(claim.recordKey, 12)
      expect(proxy.matched()).toBe(2)
      expect(await repository.claim({ ...first, petId: 13 })).toMatchObject({
        kind: 'claimed',
        petId: 12,
        takeover: true,
      })
    })
  })

  describe('pets and their ids (shared/data/pet-repository.ts, id-allocator.ts)', () => {
    it('pet put: a pet written with a late answer is written once, and the create succeeds', async () => {
      const { proxy, client, arm } = await latent({
        operation: 'PutItem',
        matches: (body) => keyOf(body, env.petTable),
      })
      const pets = new PetRepository({
        client,
        tableName: env.petTable,
        ids: new BlockIdAllocator({ client, tableName: env.petTable }),
      })
      const name = `late-${randomUUID()}`
      arm()
      const pet = await pets.create({ name, categoryId: 1n })
      expect(proxy.matched()).toBe(2)
      expect(await storedPetsNamed(env, name)).toEqual([
        expect.objectContaining({ id: expect.anything(), name }),
      ])
      expect(Number(String((await storedPetsNamed(env, name))[0]?.id))).toBe(pet.id)
    })

    it('id block: a reservation answered late skips one block of ids, never hands one out twice', async () => {
      const tableName = `test-pets-ids-${randomUUID().slice(0, 8)}`
      await ensureTable(env.client, petTableDefinition(tableName))
      const { proxy, client, arm } = await latent({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, tableName),
      })
      const late = new BlockIdAllocator({ client, tableName, blockSize: 10 })
      const other = new BlockIdAllocator({ client: env.documentClient, tableName, blockSize: 10 })
      arm()
      // The first attempt reserved 1-10, its retry 11-20: ids 1-10 are never used (a gap).
      expect(await late.next()).toBe(11)
      expect(proxy.matched()).toBe(2)
      expect(await other.next()).toBe(21)
    })
  })

  describe('the rate limiter (shared/rate-limit/rate-limiter.ts)', () => {
    const NOW = Date.UTC(2026, 10, 27, 12, 30, 30)
    const windows = utcWindowsAt(NOW)
    const limiterOn = async (rule: Omit<FaultRule, 'kind' | 'times'>) => {
      const { proxy, client, arm } = await latent(rule)
      const limiter = new DynamoRateLimiter({
        client,
        tableName: env.rateLimitTable,
        clock: () => NOW,
      })
      const keyId = `k${randomUUID().slice(0, 9)}`
      const item = async () =>
        (
          await env.documentClient.send(
            new GetCommand({
              TableName: env.rateLimitTable,
              Key: dayItemKey(keyId, windows.dayId),
              ConsistentRead: true,
            }),
          )
        ).Item ?? {}
      return { proxy, limiter, keyId, arm, item }
    }

    it('admission: a counting write answered late is sent once: admitted, counted once', async () => {
      const { proxy, limiter, keyId, arm, item } = await limiterOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'ADD #day :one'),
      })
      arm()
      const decision = await limiter.consume(keyId, { perMinute: 5, perDay: 100 })
      expect(decision.outcome).toBe('admitted')
      expect(decision.storeError).toBeInstanceOf(AmbiguousWriteError)
      expect(proxy.matched()).toBe(1)
      expect(numberOf((await item())[minuteAttribute(windows.minuteOfDay)])).toBe(1)
      const next = await limiter.consume(keyId, { perMinute: 5, perDay: 100 })
      expect(next).toMatchObject({ outcome: 'admitted', minute: { remaining: 3 } })
    })

    it('rejection count: a refusal counted with a late answer is sent once, counted once', async () => {
      const { proxy, limiter, keyId, arm, item } = await limiterOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'ADD #rejected :one'),
      })
      const plan = { perMinute: 1, perDay: 100 }
      expect((await limiter.consume(keyId, plan)).outcome).toBe('admitted')
      arm()
      const refused = await limiter.consume(keyId, plan)
      expect(refused.outcome).toBe('rate_limited')
      expect(proxy.matched()).toBe(1)
      expect(numberOf((await item())[rejectedAttribute(windows.minuteOfDay)])).toBe(1)
    })

    it('suspension: one started with a late answer stands, for its whole 15 minutes', async () => {
      const { proxy, limiter, keyId, arm, item } = await limiterOn({
        operation: 'UpdateItem',
        matches: (body) => keyOf(body, 'SET #suspendedUntil = :until'),
      })
      const plan = { perMinute: 1, perDay: 100 }
      expect((await limiter.consume(keyId, plan)).outcome).toBe('admitted')
      expect((await limiter.consume(keyId, plan)).outcome).toBe('rate_limited')
      arm()
      // The second refusal in the minute is more than the plan's 1: it suspends the key.
      const suspended = await limiter.consume(keyId, plan)
      expect(proxy.matched()).toBe(2)
      expect(suspended).toMatchObject({
        outcome: 'key_suspended',
        retryAfterSeconds: SUSPENSION_MS / 1_000,
      })
      expect(numberOf((await item())[ATTRIBUTES.suspendedUntil])).toBe(NOW + SUSPENSION_MS)
    })
  })

  describe('store keys (keys/store-key-repository.ts)', () => {
    it('put: a new store key written with a late answer is made, not refused as an id taken', async () => {
      const tableName = await createStoreKeyTable(env)
      const { proxy, client, arm } = await latent({
        operation: 'PutItem',
        matches: (body) => keyOf(body, tableName),
      })
      const keys = new StoreKeyRepository({ client, tableName })
      const item: StoreKeyItem = {
        keyId: `s-${randomUUID().replaceAll('-', '').slice(0, 10)}`,
        keyHash: 'a'.repeat(64),
        name: 'late',
        plan: 'free',
        perMinute: 60,
        perDay: 1_000,
        enabled: true,
        createdAt: '2027-03-05T10:00:00.000Z',
        macVersion: 1,
      }
      arm()
      await keys.put(item)
      expect(proxy.matched()).toBe(2)
      expect(await keys.get(item.keyId, { consistent: true })).toEqual(item)
      // Another key under the same id is still refused.
      const other = await keys
        .put({ ...item, keyHash: 'b'.repeat(64) })
        .catch((caught: unknown) => caught)
      expect(isConditionFailure(other)).toBe(true)
    })
  })

  describe('usage and suspensions for the keys CLI (keys/key-usage-repository.ts)', () => {
    it('lift: a suspension lifted with a late answer is lifted, and says until when it ran', async () => {
      const NOW = Date.UTC(2026, 10, 27, 12, 30, 30)
      const { proxy, client, arm } = await latent({
        operation: 'UpdateItem',
        // Today's item (the lift clears tomorrow's too, where a suspension crossing midnight is).
        matches: (body) =>
          keyOf(body, 'REMOVE #suspendedUntil') && keyOf(body, utcWindowsAt(NOW).dayId),
      })
      const keyId = `k${randomUUID().slice(0, 9)}`
      const limiter = new DynamoRateLimiter({
        client: env.documentClient,
        tableName: env.rateLimitTable,
        clock: () => NOW,
      })
      const plan = { perMinute: 1, perDay: 100 }
      for (let i = 0; i < 3; i += 1) await limiter.consume(keyId, plan)
      const usage = new KeyUsageRepository({
        client,
        tableName: env.rateLimitTable,
        clock: () => NOW,
      })
      expect((await usage.state(keyId)).suspendedUntil).toBe(NOW + SUSPENSION_MS)
      arm()
      expect(await usage.lift(keyId)).toBe(NOW + SUSPENSION_MS)
      expect(proxy.matched()).toBe(2)
      expect((await usage.state(keyId)).suspendedUntil).toBeUndefined()
    })
  })
})
