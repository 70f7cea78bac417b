import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import { listPetsHandler } from '#functions/list-pets/list-pets-handler.ts'
import { CursorCodec } from '#shared/data/cursor-codec.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { rateLimitMiddleware } from '#shared/rate-limit/rate-limit-middleware.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import {
  type DynamoTestEnv,
  OLD_ITEM_READS,
  startDynamoTestEnv,
} from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/**
 * docs/rate-limits-and-keys.md: a key this instance knows to be refused costs no pet-table read.
 * Real handlers, limiter and middleware on DynamoDB (dynalite), every command counted per table
 * by an SDK middleware. On dynalite a failed admission costs one more limiter call than on AWS and
 * DynamoDB Local (a GetItem, since it returns no old item with the condition failure).
 */
let env: DynamoTestEnv
let client: ReturnType<typeof createDocumentClient>
let petId: number
const calls: Record<string, number> = {}

beforeAll(async () => {
  env = await startDynamoTestEnv()
  client = createDocumentClient({
    endpoint: env.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  client.middlewareStack.add(
    (next) => async (args) => {
      const table = String((args.input as { TableName?: unknown }).TableName)
      calls[table] = (calls[table] ?? 0) + 1
      return next(args)
    },
    { step: 'initialize', name: 'countCommandsPerTable' },
  )
  petId = (await petsOn().create({ name: 'Rex', categoryId: 1n, status: 'available' })).id
})
afterAll(async () => {
  client?.destroy()
  await env?.close()
})

const petsOn = () =>
  new PetRepository({
    client,
    tableName: env.petTable,
    ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 5 }),
  })

/** The event as the authorizer passed it for this key, with these limits. */
const withKey = <Event extends ReturnType<typeof restEvent>>(
  event: Event,
  keyId: string,
  limits: { perMinute: number; perDay: number },
): Event => {
  event.requestContext.authorizer = { ...event.requestContext.authorizer, keyId, ...limits }
  return event
}

/** One function instance: its own limiter and middleware (their memory), on a movable clock. */
const instance = (operation: 'getPet' | 'listPets', startIso: string) => {
  let nowMs = Date.parse(startIso)
  const clock = () => nowMs
  const logger = fakeLogger()
  const rateLimit = rateLimitMiddleware({
    limiter: new DynamoRateLimiter({ client, tableName: env.rateLimitTable, clock }),
    access: 'read',
    logger,
    clock,
  })
  const deps = { logger, rateLimit, pets: petsOn(), clock }
  const getPet = getPetHandler(deps)
  const listPets = listPetsHandler({
    ...deps,
    cursors: new CursorCodec('refused-reads', 'listPets'),
  })
  const invoke = (keyId: string, limits: { perMinute: number; perDay: number }) =>
    operation === 'getPet'
      ? getPet(
          withKey(
            restEvent({ resource: '/pets/{petId}', pathParameters: { petId: String(petId) } }),
            keyId,
            limits,
          ),
          lambdaContext(),
        )
      : listPets(withKey(restEvent({ resource: '/pets' }), keyId, limits), lambdaContext())
  return {
    advanceTo: (iso: string) => {
      nowMs = Date.parse(iso)
    },
    /** One request of the key; what it answered and what it cost, per table. */
    call: async (keyId: string, limits: { perMinute: number; perDay: number }) => {
      for (const table of Object.keys(calls)) delete calls[table]
      const response = await invoke(keyId, limits)
      return {
        status: response.statusCode,
        code: (JSON.parse(response.body) as { code?: string }).code,
        retryAfter: response.headers?.['Retry-After'],
        remaining: response.headers?.['X-RateLimit-Remaining'],
        petTable: calls[env.petTable] ?? 0,
        rateLimitTable: calls[env.rateLimitTable] ?? 0,
      }
    },
  }
}

// Cost contract: a refused client hammering the API must not cost a pet-table read per request.
describe('cost contract: a read by a key this instance knows to be refused', () => {
  it('skips the pet table once rate_limited, still counting rejections until the key is suspended', async () => {
    const getPet = instance('getPet', '2026-03-14T10:00:05Z')
    const keyId = `key-${randomUUID()}`
    const limits = { perMinute: 2, perDay: 100 }

    for (let i = 0; i < 2; i += 1) {
      expect(await getPet.call(keyId, limits)).toMatchObject({
        status: 200,
        petTable: 1,
        rateLimitTable: 1,
      })
    }
    // The first refusal is learned while the read runs alongside the decision.
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retryAfter: '55',
      remaining: '0',
      petTable: 1,
      rateLimitTable: 2 + OLD_ITEM_READS,
    })
    // Known refused for the rest of the minute: no pet-table read, the rejection still counted.
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retryAfter: '55',
      remaining: '0',
      petTable: 0,
      rateLimitTable: 2 + OLD_ITEM_READS,
    })
    // Third rejection in the minute > perMinute (2): suspended, still without a pet-table read.
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'key_suspended',
      retryAfter: String(15 * 60),
      petTable: 0,
      rateLimitTable: 3 + OLD_ITEM_READS,
    })
    // A remembered suspension costs nothing for SUSPENSION_RECHECK_MS, and is not counted again.
    getPet.advanceTo('2026-03-14T10:00:09Z')
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'key_suspended',
      petTable: 0,
      rateLimitTable: 0,
    })
    // Later the item is read again (a lifted suspension would end here), once per recheck.
    getPet.advanceTo('2026-03-14T10:05:05Z')
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'key_suspended',
      retryAfter: String(10 * 60),
      petTable: 0,
      rateLimitTable: 1 + OLD_ITEM_READS,
    })
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 429,
      code: 'key_suspended',
      petTable: 0,
      rateLimitTable: 0,
    })
    // Once the suspension has ended the key reads again (alongside its decision).
    getPet.advanceTo('2026-03-14T10:15:06Z')
    expect(await getPet.call(keyId, limits)).toMatchObject({
      status: 200,
      petTable: 1,
      rateLimitTable: 1,
    })
  })

  it('skips the pet table for the rest of the UTC day once quota_exceeded', async () => {
    const listPets = instance('listPets', '2026-03-14T22:00:05Z')
    const keyId = `key-${randomUUID()}`
    const limits = { perMinute: 10, perDay: 1 }

    const admitted = await listPets.call(keyId, limits)
    expect(admitted).toMatchObject({ status: 200, rateLimitTable: 1 })
    expect(admitted.petTable).toBe(1)
    const first = await listPets.call(keyId, limits)
    expect(first).toMatchObject({
      status: 429,
      code: 'quota_exceeded',
      rateLimitTable: 2 + OLD_ITEM_READS,
    })
    expect(first.petTable).toBe(admitted.petTable)

    // Later minutes of the same UTC day: still refused, still counted, never read.
    for (const iso of ['2026-03-14T22:00:06Z', '2026-03-14T22:30:00Z', '2026-03-14T23:59:59Z']) {
      listPets.advanceTo(iso)
      const refused = await listPets.call(keyId, limits)
      expect(refused).toMatchObject({
        status: 429,
        code: 'quota_exceeded',
        retryAfter: String((Date.parse('2026-03-15T00:00:00Z') - Date.parse(iso)) / 1000),
        petTable: 0,
        rateLimitTable: 2 + OLD_ITEM_READS,
      })
    }
    // A new UTC day: admitted, and the read runs alongside the decision again.
    listPets.advanceTo('2026-03-15T00:00:00Z')
    expect(await listPets.call(keyId, limits)).toMatchObject({
      status: 200,
      petTable: admitted.petTable,
      rateLimitTable: 1,
    })
  })
})
