import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createPetHandler } from '#functions/create-pet/create-pet-handler.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { logger } from '#shared/observability/logger.ts'
import {
  contextWithRemaining,
  createPetEvent,
  storedPetsNamed,
} from '#test/support/create-pet-requests.ts'
import {
  type DynamoTestEnv,
  OLD_ITEM_READS,
  startDynamoTestEnv,
} from '#test/support/dynamo-test-env.ts'

/**
 * The idempotent create on DynamoDB with the real handler, records and pet repositories, where
 * HTTP cannot reach: an attempt that dies between writing the pet and saving its answer, a
 * request that meets a live lease, and what each path costs in DynamoDB calls. Faults are
 * injected at the SDK (a middleware failing chosen commands), not in the repositories.
 */
let env: DynamoTestEnv
let now = Date.parse('2026-11-22T12:00:00Z')
const clock = () => now
/** Commands to fail, as `<low-level command>@<table>`; every command sent, for counting. */
const failing = new Set<string>()
const sent: string[] = []

const build = () => {
  const client = createDocumentClient({
    endpoint: env.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string }
      const call = `${context.commandName}@${input.TableName}`
      sent.push(call)
      if (failing.has(call)) {
        throw Object.assign(new Error('injected'), {
          name: 'InternalServerError',
          $metadata: { httpStatusCode: 500 },
        })
      }
      return next(args)
    },
    { step: 'initialize', name: 'inject-faults' },
  )
  const pets = new PetRepository({
    client,
    tableName: env.petTable,
    ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 50 }),
  })
  const idempotency = new IdempotencyRepository({ client, tableName: env.idempotencyTable, clock })
  return createPetHandler({ logger, pets, idempotency })
}

let handler: ReturnType<typeof build>

beforeAll(async () => {
  env = await startDynamoTestEnv()
  handler = build()
})
afterAll(async () => {
  await env?.close()
})
beforeEach(() => {
  failing.clear()
  sent.length = 0
})

const create = (body: object, idempotencyKey?: string, remainingMs?: number) =>
  handler(createPetEvent(body, idempotencyKey), contextWithRemaining(remainingMs))

const completion = () => `UpdateItemCommand@${env.idempotencyTable}`

describe('idempotent create when an attempt dies', () => {
  it('a retry after the lease of an attempt that died after writing the pet answers that pet: never a second', async () => {
    const name = `crash-${randomUUID()}`
    const key = randomUUID()
    // The completion and the release both fail: as if the instance died after the pet put.
    failing.add(completion())
    const died = await create({ name, categoryId: 1 }, key, 5_000)
    expect(died.statusCode).toBe(503)
    expect(await storedPetsNamed(env, name)).toHaveLength(1)

    failing.clear()
    // Still leased: the retry is told to wait, and nothing is written.
    const early = await create({ name, categoryId: 1 }, key)
    expect(early.statusCode).toBe(409)
    expect(JSON.parse(early.body)).toMatchObject({ code: 'idempotency_in_progress' })
    expect(Number(early.headers['Retry-After'])).toBe(5)

    now += 5_001
    const retried = await create({ name, categoryId: 1 }, key)
    expect(retried.statusCode).toBe(201)
    const [stored] = await storedPetsNamed(env, name)
    expect(JSON.parse(retried.body).id).toBe(Number(String(stored?.id)))
    expect(await storedPetsNamed(env, name)).toHaveLength(1)

    const replayed = await create({ name, categoryId: 1 }, key)
    expect(replayed.headers['Idempotent-Replayed']).toBe('true')
    expect(replayed.body).toBe(retried.body)
  })

  it('a failed attempt releases its lease: the immediate retry takes over with the same id', async () => {
    const name = `release-${randomUUID()}`
    const key = randomUUID()
    failing.add(`PutItemCommand@${env.petTable}`)
    const failed = await create({ name, categoryId: 1 }, key)
    expect(failed.statusCode).toBe(503)
    expect(await storedPetsNamed(env, name)).toHaveLength(0)

    failing.clear()
    const retried = await create({ name, categoryId: 1 }, key)
    expect(retried.statusCode).toBe(201)
    expect(await storedPetsNamed(env, name)).toHaveLength(1)
  })

  it('a different body still gets 422 while the first attempt holds the key', async () => {
    const key = randomUUID()
    failing.add(completion())
    expect((await create({ name: 'first', categoryId: 1 }, key)).statusCode).toBe(503)
    failing.clear()
    const other = await create({ name: 'second', categoryId: 1 }, key)
    expect(other.statusCode).toBe(422)
  })
})

/**
 * Cost contract: the DynamoDB calls of one create, per table, as docs/api.md ("Idempotent
 * creation") lists them and docs/performance.md ("Cost estimate") prices them. A call added or
 * moved fails here before it shows on the bill.
 */
describe('cost contract: DynamoDB calls per create (pet table, records table)', () => {
  const count = (table: string) => sent.filter((call) => call.endsWith(`@${table}`)).length

  it('without a key: one pet put (plus one counter update per block of 50 ids)', async () => {
    await create({ name: 'warm', categoryId: 1 }) // the block is reserved on first use
    sent.length = 0
    await create({ name: `plain-${randomUUID()}`, categoryId: 1 })
    expect(sent).toEqual([`PutItemCommand@${env.petTable}`])
  })

  it('with a new key: the claim, the pet put and the completion', async () => {
    await create({ name: 'warm', categoryId: 1 })
    sent.length = 0
    await create({ name: `keyed-${randomUUID()}`, categoryId: 1 }, randomUUID())
    expect(sent).toEqual([
      `PutItemCommand@${env.idempotencyTable}`,
      `PutItemCommand@${env.petTable}`,
      `UpdateItemCommand@${env.idempotencyTable}`,
    ])
  })

  it('a replay: the refused claim (and a read where the backend does not return the old item)', async () => {
    const key = randomUUID()
    const body = { name: `replay-${randomUUID()}`, categoryId: 1 }
    await create(body, key)
    sent.length = 0
    await create(body, key)
    expect(count(env.petTable)).toBe(0)
    // AWS and DynamoDB Local return the old item with the failed condition; dynalite does not.
    expect(sent).toEqual([
      `PutItemCommand@${env.idempotencyTable}`,
      ...Array(OLD_ITEM_READS).fill(`GetItemCommand@${env.idempotencyTable}`),
    ])
  })
})
