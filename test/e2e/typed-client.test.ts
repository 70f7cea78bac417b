import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Pet, petstoreClient } from '#openapi/petstore-client.ts'
import { assertKeepsContract } from '#test/support/contract-validator.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/** The example client from openapi/, generated types and openapi-fetch, against the local server. */
const KEY = 'e2e-enterprise-typed-0123456789a'

/** The client's own fetch, with every answer checked against the OpenAPI document too. */
const contractCheckingFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init)
  const response = await fetch(request)
  const text = await response.clone().text()
  assertKeepsContract({
    method: request.method,
    url: request.url,
    status: response.status,
    headers: response.headers,
    text,
  })
  return response
}

let server: InProcessServer
let client: ReturnType<typeof petstoreClient>

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY}` })
  client = petstoreClient(server.baseUrl, KEY, { fetch: contractCheckingFetch })
})
afterAll(async () => {
  await server?.stop()
})

describe('typed client (openapi-typescript + openapi-fetch)', () => {
  it('creates, fetches and lists pets through the generated types', async () => {
    const name = `typed-${randomUUID()}`
    const created: Pet[] = []
    for (let index = 0; index < 5; index += 1) {
      const { data, response } = await client.createPet({ name, categoryId: index, status: 'sold' })
      expect(response.status).toBe(201)
      if (data) created.push(data)
    }
    expect(created).toHaveLength(5)

    const first = created[0] as Pet
    const { data: fetched, response } = await client.getPet(first.id)
    expect(fetched).toEqual(first)
    expect(response.headers.get('Deprecation')).toMatch(/^@\d+$/)

    const listed: Pet[] = []
    for await (const pet of client.listAll('sold', 2)) if (pet.name === name) listed.push(pet)
    expect(listed.map((pet) => pet.id)).toEqual(created.map((pet) => pet.id))
  })

  it('sends the Idempotency-Key header: a retry gets the same pet', async () => {
    const pet = { name: `typed-${randomUUID()}`, categoryId: 1 }
    const key = randomUUID()
    const first = await client.createPet(pet, key)
    const retry = await client.createPet(pet, key)
    expect(retry.data?.id).toBe(first.data?.id)
    expect(retry.response.headers.get('Idempotent-Replayed')).toBe('true')
  })

  it('types the Error body of a failure', async () => {
    const { data, error, response } = await client.getPet(987_654_321)
    expect(data).toBeUndefined()
    expect(response.status).toBe(404)
    expect(error).toMatchObject({ code: 'pet_not_found', status: 404 })
  })
})
