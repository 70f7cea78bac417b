import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPetHandler } from '#functions/create-pet/create-pet-handler.ts'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import { listPetsHandler } from '#functions/list-pets/list-pets-handler.ts'
import { routeOf } from '#shared/config/routes-config.ts'
import { CursorCodec } from '#shared/data/cursor-codec.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { logger } from '#shared/observability/logger.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import {
  FIXTURE_BASE_URL as BASE,
  FIXTURE_REQUEST_ID,
  lambdaContext,
  type RestRequest,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fixedClock } from '#test/support/fixed-clock.ts'

const SUNSET = Date.parse('2030-12-05T00:00:00Z')

let env: DynamoTestEnv
let pets: PetRepository
let idempotency: IdempotencyRepository
const cursors = new CursorCodec('handlers-rest-event-test', 'listPets')

beforeAll(async () => {
  env = await startDynamoTestEnv()
  const client = env.documentClient
  pets = new PetRepository({
    client,
    tableName: env.petTable,
    ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 5 }),
  })
  idempotency = new IdempotencyRepository({ client, tableName: env.idempotencyTable })
})
afterAll(async () => {
  await env?.close()
})

const context = lambdaContext()
const createPet = (request: RestRequest) =>
  createPetHandler({ logger, pets, idempotency })(
    restEvent({ method: 'POST', headers: { 'Content-Type': 'application/json' }, ...request }),
    context,
  )
const listPets = (query: Record<string, string>) =>
  listPetsHandler({ logger, pets, cursors })(restEvent({ query }), context)
const getPet = (petId: string, clock: Clock = systemClock) =>
  getPetHandler({ logger, pets, clock })(
    restEvent({ resource: '/pets/{petId}', pathParameters: { petId } }),
    context,
  )

describe('createPet with the REST proxy event', () => {
  it('answers 201 with the pet, its id and a Location under the stage address', async () => {
    const response = await createPet({
      body: '{"name":"Rex","categoryId":9223372036854775807,"status":"available"}',
    })
    expect(response.statusCode).toBe(201)
    const pet = JSON.parse(response.body) as { id: number; name: string; status: string }
    expect(pet).toMatchObject({ name: 'Rex', status: 'available' })
    expect(pet.id).toSatisfy(Number.isSafeInteger)
    expect(pet.id).toBeGreaterThan(0)
    // int64 kept to the last digit.
    expect(response.body).toContain('"categoryId":9223372036854775807')
    expect(response.headers.Location).toBe(`${BASE}/pets/${pet.id}`)
    expect(response.headers['Content-Type']).toMatch(/^application\/json/)
  })

  it('answers 400 validation_failed naming every broken field', async () => {
    const response = await createPet({ body: '{"name":"  ","categoryId":1.5,"id":7}' })
    expect(response.statusCode).toBe(400)
    const body = JSON.parse(response.body) as {
      code: string
      status: number
      requestId: string
      details: { field: string; message: string }[]
    }
    expect(body).toMatchObject({
      code: 'validation_failed',
      status: 400,
      requestId: FIXTURE_REQUEST_ID,
    })
    expect(body.details.map((detail) => detail.field).sort()).toEqual(['categoryId', 'id', 'name'])
  })
})

describe('listPets with the REST proxy event', () => {
  it('pages with Link and X-Next-Cursor while more pets exist, and stops on the last page', async () => {
    const names = ['Sold-1', 'Sold-2', 'Sold-3']
    for (const name of names) {
      const created = await createPet({
        body: JSON.stringify({ name, categoryId: 1, status: 'sold' }),
      })
      expect(created.statusCode).toBe(201)
    }

    const first = await listPets({ limit: '2', status: 'sold' })
    expect(first.statusCode).toBe(200)
    const firstPets = JSON.parse(first.body) as { name: string }[]
    expect(firstPets).toHaveLength(2)
    const cursor = first.headers['X-Next-Cursor'] as string
    expect(cursor).toBeTruthy()
    const next = new URL(`${BASE}/pets`)
    next.search = new URLSearchParams({ limit: '2', status: 'sold', cursor }).toString()
    expect(first.headers.Link).toBe(`<${next.href}>; rel="next"`)

    const second = await listPets({ limit: '2', status: 'sold', cursor })
    expect(second.statusCode).toBe(200)
    const secondPets = JSON.parse(second.body) as { name: string }[]
    expect([...firstPets, ...secondPets].map((pet) => pet.name)).toEqual(names)
    expect(second.headers).not.toHaveProperty('Link')
    expect(second.headers).not.toHaveProperty('X-Next-Cursor')
  })

  it('answers 400 validation_failed for a limit out of range', async () => {
    const response = await listPets({ limit: '101' })
    expect(response.statusCode).toBe(400)
    expect(JSON.parse(response.body)).toMatchObject({
      code: 'validation_failed',
      details: [{ field: 'limit' }],
    })
  })
})

describe('getPet with the REST proxy event', () => {
  const { deprecation } = routeOf('getPet')
  const deprecationHeaders = {
    Deprecation: `@${Date.parse(deprecation.deprecatedAt) / 1000}`,
    Sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
    Link: `<${BASE}/pets>; rel="successor-version"`,
  }

  it('answers 200 with the pet and the deprecation headers', async () => {
    const created = JSON.parse(
      (await createPet({ body: '{"name":"Tom","categoryId":2}' })).body,
    ) as { id: number }
    const response = await getPet(String(created.id))
    expect(response.statusCode).toBe(200)
    expect(JSON.parse(response.body)).toEqual({ id: created.id, name: 'Tom', categoryId: 2 })
    expect(response.headers).toMatchObject(deprecationHeaders)
  })

  it('answers 404 pet_not_found, still with the deprecation headers', async () => {
    const response = await getPet('987654321')
    expect(response.statusCode).toBe(404)
    expect(JSON.parse(response.body)).toMatchObject({
      code: 'pet_not_found',
      status: 404,
      requestId: FIXTURE_REQUEST_ID,
    })
    expect(response.headers).toMatchObject(deprecationHeaders)
  })

  it('answers 400 validation_failed for a petId that is not a positive integer', async () => {
    const response = await getPet('abc')
    expect(response.statusCode).toBe(400)
    expect(JSON.parse(response.body)).toMatchObject({
      code: 'validation_failed',
      details: [{ field: 'petId' }],
    })
  })

  it('answers 410 gone from the sunset instant on, and 200 one millisecond before', async () => {
    const created = JSON.parse(
      (await createPet({ body: '{"name":"Old","categoryId":3}' })).body,
    ) as { id: number }
    const id = String(created.id)

    expect((await getPet(id, fixedClock(SUNSET - 1))).statusCode).toBe(200)
    for (const at of [SUNSET, SUNSET + 1, Date.parse('2031-06-01T00:00:00Z')]) {
      const response = await getPet(id, fixedClock(at))
      expect(response.statusCode).toBe(410)
      expect(JSON.parse(response.body)).toMatchObject({ code: 'gone', status: 410 })
      expect(response.headers).toMatchObject(deprecationHeaders)
    }
  })
})
