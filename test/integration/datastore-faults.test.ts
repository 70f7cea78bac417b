import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPetHandler } from '#functions/create-pet/create-pet-handler.ts'
import {
  createDocumentClient,
  type DynamoClientLimits,
  dynamoConfigFromEnv,
} from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { DEADLINE_MARGIN_MS } from '#shared/middleware/http-pipeline.ts'
import { rateLimitMiddleware } from '#shared/rate-limit/rate-limit-middleware.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import {
  CREATE_PET_TIMEOUT_MS,
  contextWithRemaining,
  createPetEvent,
  storedPetsNamed,
} from '#test/support/create-pet-requests.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { type FaultKind, type FaultProxy, startFaultProxy } from '#test/support/fault-proxy.ts'

/**
 * Faults injected at DynamoDB's HTTP layer (a proxy in front of the real datastore) while the
 * real createPet handler runs with its rate limiter, id allocator, pet and idempotency
 * repositories and the SDK's own retries: throttling, 500s, stalls, dropped connections and
 * answers lost after the write was applied, at every call a create makes, once (the SDK's retry
 * cures it) or on every attempt (the call fails). Each create answers 201 or 503 with Retry-After
 * and an Error body, never anything else, and leaves exactly one pet or none: never a duplicate.
 */
const LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 200,
  requestTimeoutMs: 300,
  maxAttempts: 2,
  maxBackoffMs: 1_000,
}

let env: DynamoTestEnv
let proxy: FaultProxy
/** The idempotency records' time: a test moves it to let a claim's lease run out. */
let now = Date.now()
let handler: ReturnType<typeof createPetHandler>

beforeAll(async () => {
  env = await startDynamoTestEnv()
  proxy = await startFaultProxy(env.endpoint)
  const client = createDocumentClient({
    ...dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: proxy.endpoint }, LIMITS),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const logger = fakeLogger()
  handler = createPetHandler({
    logger,
    // One id per block: every create makes the counter call, so faults can land on it.
    pets: new PetRepository({
      client,
      tableName: env.petTable,
      ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 1 }),
    }),
    idempotency: new IdempotencyRepository({
      client,
      tableName: env.idempotencyTable,
      clock: () => now,
    }),
    rateLimit: rateLimitMiddleware({
      limiter: new DynamoRateLimiter({ client, tableName: env.rateLimitTable }),
      access: 'write',
      logger,
    }),
  })
})
afterAll(async () => {
  await proxy?.close()
  await env?.close()
})

const create = (body: object, idempotencyKey?: string, remainingMs?: number) =>
  handler(createPetEvent(body, idempotencyKey), contextWithRemaining(remainingMs))

const POSITIONS = {
  limiter: {
    operation: 'UpdateItem',
    matches: (body: string) => body.includes(env.rateLimitTable),
  },
  counter: { operation: 'UpdateItem', matches: (body: string) => body.includes('COUNTER#pet') },
  'pet put': { operation: 'PutItem', matches: (body: string) => body.includes(env.petTable) },
} as const
type Position = keyof typeof POSITIONS

const KINDS: FaultKind[] = ['throttle', 'server-error', 'stall', 'drop']

/** What the client must see when a call fails on every attempt. */
const expectedWhenPersistent = (position: Position): 201 | 503 =>
  // The limiter's store failing admits the request (failure policy, docs/rate-limits-and-keys.md).
  position === 'limiter' ? 201 : 503

const cases = Object.keys(POSITIONS).flatMap((position) =>
  KINDS.flatMap((kind) => [
    { position: position as Position, kind, times: 1, expected: 201 as const },
    {
      position: position as Position,
      kind,
      times: LIMITS.maxAttempts,
      expected: expectedWhenPersistent(position as Position),
    },
  ]),
)

describe('faults at every DynamoDB call of a create', () => {
  it.each(cases)(
    '$kind at the $position, $times time(s): $expected and at most one pet',
    async ({ position, kind, times, expected }) => {
      const name = `fault-${randomUUID()}`
      proxy.setRule({ ...POSITIONS[position], kind, times })
      const started = Date.now()
      const response = await create({ name, categoryId: 1 })
      const elapsed = Date.now() - started
      proxy.setRule(undefined)

      expect(response.statusCode).toBe(expected)
      const stored = await storedPetsNamed(env, name)
      if (expected === 201) {
        expect(stored).toHaveLength(1)
      } else {
        const body = JSON.parse(response.body)
        expect(body).toMatchObject({ code: 'service_unavailable', status: 503 })
        expect(Number(response.headers['Retry-After'])).toBeGreaterThanOrEqual(1)
        expect(stored).toHaveLength(0)
      }
      // Well inside the Lambda timeout: each call is bounded by the SDK limits.
      expect(elapsed).toBeLessThan(CREATE_PET_TIMEOUT_MS - DEADLINE_MARGIN_MS)
    },
  )

  it.each(['pet put', 'counter'] as const)(
    'an answer lost after DynamoDB applied the %s: the SDK retries, one pet, 201',
    async (position) => {
      const name = `lost-${randomUUID()}`
      proxy.setRule({ ...POSITIONS[position], kind: 'lost-answer', times: 1 })
      const response = await create({ name, categoryId: 1 })
      proxy.setRule(undefined)
      expect(response.statusCode).toBe(201)
      expect(await storedPetsNamed(env, name)).toHaveLength(1)
    },
  )

  it('a lost answer to the idempotency claim is recognised as this request’s own claim', async () => {
    const name = `lost-claim-${randomUUID()}`
    proxy.setRule({
      operation: 'PutItem',
      matches: (body) => body.includes(env.idempotencyTable),
      kind: 'lost-answer',
      times: 1,
    })
    const response = await create({ name, categoryId: 1 }, randomUUID())
    proxy.setRule(undefined)
    expect(response.statusCode).toBe(201)
    expect(await storedPetsNamed(env, name)).toHaveLength(1)
  })

  it('a retried create with the same Idempotency-Key after a 503 makes one pet', async () => {
    const name = `retry-${randomUUID()}`
    const key = randomUUID()
    proxy.setRule({ ...POSITIONS['pet put'], kind: 'lost-answer', times: LIMITS.maxAttempts })
    const failed = await create({ name, categoryId: 1 }, key)
    proxy.setRule(undefined)
    // Both attempts were applied-or-refused by DynamoDB, but the client saw no answer: 503.
    expect(failed.statusCode).toBe(503)
    let retried = await create({ name, categoryId: 1 }, key)
    if (retried.statusCode === 409) {
      // The failed attempt's release of its claim can time out too (300 ms per call on a loaded
      // machine): then its lease holds the key, and the client waits what Retry-After says.
      expect(JSON.parse(retried.body)).toMatchObject({ code: 'idempotency_in_progress' })
      now += Number(retried.headers?.['Retry-After']) * 1_000
      retried = await create({ name, categoryId: 1 }, key)
    }
    expect(retried.statusCode).toBe(201)
    expect(await storedPetsNamed(env, name)).toHaveLength(1)
  })
})

describe('the invocation deadline', () => {
  it('answers 503 before the Lambda timeout when DynamoDB stalls past it', async () => {
    const name = `deadline-${randomUUID()}`
    const remainingMs = DEADLINE_MARGIN_MS + 200
    // A stall on every attempt would take 2 × 300 ms plus backoff: longer than the invocation.
    proxy.setRule({ ...POSITIONS['pet put'], kind: 'stall', times: LIMITS.maxAttempts })
    const started = Date.now()
    const response = await create({ name, categoryId: 1 }, undefined, remainingMs)
    const elapsed = Date.now() - started
    proxy.setRule(undefined)
    expect(response.statusCode).toBe(503)
    expect(JSON.parse(response.body)).toMatchObject({ code: 'service_unavailable' })
    expect(elapsed).toBeLessThan(remainingMs)
  })
})

afterAll(() => {
  const total = [...(proxy?.injected.values() ?? [])].reduce((sum, count) => sum + count, 0)
  process.stdout.write(
    `datastore faults injected: ${total} (${JSON.stringify(Object.fromEntries(proxy?.injected ?? []))})\n`,
  )
})
