import { randomBytes } from 'node:crypto'
import { ScanCommand } from '@aws-sdk/lib-dynamodb'
import type { APIGatewayProxyResult } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPetHandler } from '#functions/create-pet/create-pet-handler.ts'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import { listPetsHandler } from '#functions/list-pets/list-pets-handler.ts'
import { CursorCodec } from '#shared/data/cursor-codec.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { PET_TABLE } from '#shared/data/table-keys.ts'
import { systemClock } from '#shared/time/clock.ts'
import { lambdaContext, type RestRequest, restEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { pool } from '#test/support/task-pool.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * Several Lambda instances at once: independently built createPet, getPet and listPets handlers
 * (each instance its own SDK client, id allocator and cursor codec, as separate instances have)
 * share one table. Thousands of creates, a fifth of them invalid, spread over the instances with
 * many in flight: ids are distinct, every 201 is readable from another instance, both kinds of
 * list page through every pet exactly once (cursors made by one instance, followed on another),
 * and the table holds exactly the pets answered 201. PETSTORE_TEST_SCALE or PETSTORE_LOAD_CREATES
 * widens the run (test/support/test-scale.ts).
 */
const INSTANCES = 6
const CREATES = scaled(200, 'PETSTORE_LOAD_CREATES')
const IN_FLIGHT = 96
const STATUSES = ['available', 'pending', 'sold', undefined] as const
/** The stage's cursor secret: every listPets instance of a stage gets the same one. */
const CURSOR_SECRET = randomBytes(32).toString('hex')

interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}

let env: DynamoTestEnv

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

const instance = () => {
  const client = createDocumentClient({
    endpoint: env.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const pets = new PetRepository({
    client,
    tableName: env.petTable,
    // Small blocks so instances interleave their reservations many times.
    ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 7 }),
  })
  const logger = fakeLogger()
  const create = createPetHandler({
    logger,
    pets,
    idempotency: new IdempotencyRepository({ client, tableName: env.idempotencyTable }),
  })
  const get = getPetHandler({ logger, pets, clock: systemClock })
  const list = listPetsHandler({
    logger,
    pets,
    cursors: new CursorCodec(CURSOR_SECRET, 'listPets'),
  })
  return { create, get, list }
}
type Instance = ReturnType<typeof instance>

const JSON_HEADERS = { 'Content-Type': 'application/json' }

/** Every fifth create is one the API must refuse: 400, 400, 415, 400 in turn. */
const invalidCreate = (i: number): RestRequest =>
  [
    { headers: JSON_HEADERS, body: JSON.stringify({ categoryId: i }) },
    { headers: JSON_HEADERS, body: JSON.stringify({ name: `bad ${i}`, categoryId: i, id: 7 }) },
    {
      headers: { 'Content-Type': 'text/plain' },
      body: JSON.stringify({ name: `bad ${i}`, categoryId: i }),
    },
    { headers: JSON_HEADERS, body: `{"name":"bad ${i}","categoryId":1.5}` },
  ][i % 4] as RestRequest

/** Every page of a listing, each page asked of the next instance in turn. */
const listAll = async (instances: Instance[], status?: string): Promise<Pet[]> => {
  const pets: Pet[] = []
  let cursor: string | undefined
  for (let page = 0; ; page += 1) {
    const response: APIGatewayProxyResult = await (instances[page % INSTANCES] as Instance).list(
      restEvent({
        query: { limit: '100', ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) },
      }),
      lambdaContext(),
    )
    expect(response.statusCode).toBe(200)
    pets.push(...(JSON.parse(response.body) as Pet[]))
    cursor = response.headers?.['X-Next-Cursor'] as string | undefined
    if (!cursor) return pets
  }
}

/** Every pet item in the table, read directly (consistent scan). */
const storedIds = async (): Promise<number[]> => {
  const stored: number[] = []
  let startKey: Record<string, unknown> | undefined
  do {
    const page = await env.documentClient.send(
      new ScanCommand({
        TableName: env.petTable,
        FilterExpression: 'begins_with(#pk, :pet)',
        ExpressionAttributeNames: { '#pk': PET_TABLE.partitionKey },
        ExpressionAttributeValues: { ':pet': PET_TABLE.petKeyPrefix },
        ExclusiveStartKey: startKey,
        ConsistentRead: true,
      }),
    )
    stored.push(...(page.Items ?? []).map((item) => Number(String(item.id))))
    startKey = page.LastEvaluatedKey
  } while (startKey)
  return stored
}

const byId = (a: number, b: number) => a - b

describe('concurrent Lambda instances', () => {
  it(`${CREATES} creates over ${INSTANCES} instances (${IN_FLIGHT} in flight): distinct ids, every 201 stored once and listed once, nothing else`, {
    timeout: 120_000,
  }, async () => {
    const instances = Array.from({ length: INSTANCES }, instance)
    const results = await pool(
      Array.from({ length: CREATES }, (_, i) => async () => {
        const valid = i % 5 !== 4
        const status = STATUSES[i % STATUSES.length]
        const request: RestRequest = valid
          ? {
              headers: JSON_HEADERS,
              body: JSON.stringify({ name: `pet ${i}`, categoryId: i, ...(status && { status }) }),
            }
          : invalidCreate(i)
        const response = await (instances[i % INSTANCES] as Instance).create(
          restEvent({ method: 'POST', ...request }),
          lambdaContext(),
        )
        return { valid, response }
      }),
      IN_FLIGHT,
    )

    const created = results.filter((result) => result.valid).map((result) => result.response)
    const refused = results.filter((result) => !result.valid).map((result) => result.response)
    expect(created.map((response) => response.statusCode)).toEqual(created.map(() => 201))
    expect(new Set(refused.map((response) => response.statusCode))).toEqual(new Set([400, 415]))
    const pets = created.map((response) => JSON.parse(response.body) as Pet)
    const ids = pets.map((pet) => pet.id)
    expect(new Set(ids).size).toBe(ids.length)

    // Every 201 reads back as answered, from an instance other than the one that created it.
    const reads = await pool(
      pets.map(
        (pet, n) => () =>
          (instances[(n + 1) % INSTANCES] as Instance).get(
            restEvent({ resource: '/pets/{petId}', pathParameters: { petId: String(pet.id) } }),
            lambdaContext(),
          ),
      ),
      IN_FLIGHT,
    )
    expect(reads.map((read) => read.statusCode)).toEqual(reads.map(() => 200))
    expect(reads.map((read) => JSON.parse(read.body))).toEqual(pets)

    // The table holds exactly the accepted pets: nothing was written for a refused request.
    expect((await storedIds()).sort(byId)).toEqual([...ids].sort(byId))

    // The unfiltered list visits every pet exactly once; each status list exactly its pets, in
    // id order.
    const listed = await listAll(instances)
    expect(listed.map((pet) => pet.id).sort(byId)).toEqual([...ids].sort(byId))
    for (const status of ['available', 'pending', 'sold']) {
      const expected = pets
        .filter((pet) => pet.status === status)
        .map((pet) => pet.id)
        .sort(byId)
      expect((await listAll(instances, status)).map((pet) => pet.id)).toEqual(expected)
    }
  })
})
