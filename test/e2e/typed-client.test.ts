import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contractCheckingFetch } from '#openapi/contract-validator.ts'
import {
  createPetstoreClient,
  type Pet,
  PetstoreApiError,
  type PetstoreClient,
} from '#openapi/petstore-client.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The client in openapi/ (generated types, openapi-fetch) against the local server: its typed
 * methods and the openapi-fetch client underneath, every answer checked against the contract.
 */
const KEY = 'e2e-enterprise-typed-0123456789a'

let server: InProcessServer
let client: PetstoreClient

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY}` })
  client = createPetstoreClient({
    baseUrl: server.baseUrl,
    apiKey: KEY,
    fetch: contractCheckingFetch(),
  })
})
afterAll(async () => {
  await server?.stop()
})

describe('typed client (openapi-typescript + openapi-fetch)', () => {
  it('creates, fetches and lists pets through the generated types', async () => {
    const name = `typed-${randomUUID()}`
    const created: Pet[] = []
    for (let index = 0; index < 5; index += 1) {
      created.push(await client.createPet({ name, categoryId: index, status: 'sold' }))
    }
    const first = created[0] as Pet
    expect(await client.getPet(first.id)).toEqual(first)

    const listed: Pet[] = []
    for await (const pet of client.pets({ status: 'sold', limit: 2 })) {
      if (pet.name === name) listed.push(pet)
    }
    expect(listed.map((pet) => pet.id)).toEqual(created.map((pet) => pet.id))
  })

  it('sends the Idempotency-Key header: a repeat gets the same pet, marked replayed', async () => {
    const pet = { name: `typed-${randomUUID()}`, categoryId: 1 }
    const idempotencyKey = randomUUID()
    const first = await client.createPet(pet, { idempotencyKey })
    const repeat = await client.raw.POST('/pets', {
      body: pet,
      params: { header: { 'Idempotency-Key': idempotencyKey } },
    })
    expect(repeat.data?.id).toBe(first.id)
    expect(repeat.response.headers.get('Idempotent-Replayed')).toBe('true')
  })

  it('types the Error body of a failure, raw and as a thrown PetstoreApiError', async () => {
    const { data, error, response } = await client.raw.GET('/pets/{petId}', {
      params: { path: { petId: 987_654_321 } },
    })
    expect(data).toBeUndefined()
    expect(response.status).toBe(404)
    expect(error).toMatchObject({ code: 'pet_not_found', status: 404 })
    expect(response.headers.get('Deprecation')).toMatch(/^@\d+$/)

    await expect(client.getPet(987_654_321)).rejects.toBeInstanceOf(PetstoreApiError)
  })
})
