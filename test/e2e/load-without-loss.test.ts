import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ApiResponse,
  apiClient,
  type InProcessServer,
  nextLink,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { pool } from '#test/support/task-pool.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * Hundreds (CI: thousands) of concurrent creates through the local server, a fifth of them
 * invalid: every 201 is readable afterwards, ids are distinct, both kinds of list visit every
 * pet exactly once, and nothing is stored for a rejected request. Creates carry an
 * Idempotency-Key and are retried on 503 as a client should: a retry never adds a pet.
 * PETSTORE_TEST_SCALE or PETSTORE_LOAD_CREATES widens the run (test/support/test-scale.ts).
 */
const CREATES = scaled(200, 'PETSTORE_LOAD_CREATES')
const IN_FLIGHT = 64
const KEY = 'load-enterprise-0123456789abcdef'
const STATUSES = ['available', 'pending', 'sold', undefined] as const
/** Names unique to this run: the table may be shared (one DynamoDB Local for every suite). */
const RUN = randomUUID().slice(0, 8)

interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}

let server: InProcessServer
let api: ReturnType<typeof apiClient>

beforeAll(async () => {
  server = await startInProcessServer({
    PETSTORE_API_KEYS: `enterprise:${KEY}`,
    ENTERPRISE_LIMITS: '100000000/700000000',
  })
  api = apiClient(server.baseUrl, KEY)
})
afterAll(async () => {
  await server?.stop()
})

/**
 * A client that does what the API asks: on 503 (the datastore's time limits on a busy machine) or
 * 409 (its own earlier attempt still holds the key) it waits Retry-After and retries with the
 * same Idempotency-Key, which must never make a second pet.
 */
const createWithRetries = async (
  pet: object,
  idempotencyKey: string,
): Promise<ApiResponse<Pet>> => {
  let response = await api.post<Pet>('/pets', pet, {
    headers: { 'Idempotency-Key': idempotencyKey },
  })
  for (let retry = 0; retry < 5 && [409, 503].includes(response.status); retry += 1) {
    const seconds = Math.min(2, Number(response.headers.get('retry-after') ?? 1))
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    response = await api.post<Pet>('/pets', pet, { headers: { 'Idempotency-Key': idempotencyKey } })
  }
  return response
}

/** Every page of a listing, following the next links. */
const listAll = async (query: string): Promise<Pet[]> => {
  const pets: Pet[] = []
  let url: string | undefined = `/pets?limit=100${query}`
  while (url) {
    const page: ApiResponse<Pet[]> = await api.get<Pet[]>(url)
    expect(page.status).toBe(200)
    pets.push(...page.json)
    url = nextLink(page.headers)
  }
  return pets
}

/** Every fifth request is one the API must refuse: 400, 400, 415, 400 in turn. */
const invalid = (i: number) =>
  [
    () => api.post('/pets', { categoryId: i }),
    () => api.post('/pets', { name: `bad-${RUN} ${i}`, categoryId: i, id: 7 }),
    () =>
      api.post('/pets', `{"name":"bad-${RUN} ${i}","categoryId":${i}}`, {
        headers: { 'Content-Type': 'text/plain' },
      }),
    () => api.post('/pets', { name: `bad-${RUN} ${i}`, categoryId: '1.5' }),
  ][i % 4] as () => Promise<ApiResponse>

describe('load without loss', () => {
  it(`${CREATES} concurrent creates (${IN_FLIGHT} in flight): every 201 stored once, nothing else`, {
    timeout: 120_000,
  }, async () => {
    const tasks = Array.from({ length: CREATES }, (_, i) => {
      if (i % 5 === 4) return async () => ({ valid: false, response: await invalid(i)() })
      const status = STATUSES[i % STATUSES.length]
      const pet = { name: `load-${RUN} ${i}`, categoryId: i, ...(status ? { status } : {}) }
      return async () => ({
        valid: true,
        response: await createWithRetries(pet, `load-${RUN}-${i}`),
      })
    })
    const results = await pool(tasks, IN_FLIGHT)

    const created = results.filter((result) => result.valid).map((result) => result.response)
    const refused = results.filter((result) => !result.valid).map((result) => result.response)
    const failures = created.filter((response) => response.status !== 201)
    expect(failures.map((response) => `${response.status} ${response.text}`).slice(0, 3)).toEqual(
      [],
    )
    expect(new Set(refused.map((response) => response.status))).toEqual(new Set([400, 415]))

    const ids = created.map((response) => (response.json as Pet).id)
    expect(new Set(ids).size).toBe(ids.length)

    // Every 201 is readable as it was answered (read back by a few clients at a time).
    const reads = await pool(
      created.map((response) => () => api.get<Pet>(`/pets/${(response.json as Pet).id}`)),
      8,
    )
    expect(reads.map((read) => read.text)).toEqual(created.map((response) => response.text))

    // The unfiltered list visits each stored pet exactly once, and only those: no pet was
    // written for a refused request.
    const ours = (pets: Pet[]) => pets.filter((pet) => pet.name.includes(`-${RUN} `))
    const listed = ours(await listAll(''))
    expect(listed.map((pet) => pet.id).sort((a, b) => a - b)).toEqual(
      [...ids].sort((a, b) => a - b),
    )
    expect(listed.filter((pet) => pet.name.startsWith(`bad-${RUN}`))).toEqual([])

    // Each status list holds exactly the pets created with that status, in id order.
    for (const status of ['available', 'pending', 'sold']) {
      const expected = created
        .map((response) => response.json as Pet)
        .filter((pet) => pet.status === status)
        .map((pet) => pet.id)
        .sort((a, b) => a - b)
      const filtered = ours(await listAll(`&status=${status}`))
      expect(filtered.map((pet) => pet.id)).toEqual(expected)
    }
  })
})
