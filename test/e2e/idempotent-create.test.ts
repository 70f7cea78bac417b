import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_WINDOW_SECONDS,
  IDEMPOTENT_REPLAYED_HEADER,
} from '#shared/domain/idempotency-schema.ts'
import {
  type ApiResponse,
  apiClient,
  type InProcessServer,
  nextLink,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * Idempotent creation (docs/api.md) over HTTP on the local server: a client that retries a
 * create with the same Idempotency-Key gets the first answer, never a second pet.
 */
const KEY = 'e2e-enterprise-idem-0123456789ab'
const OTHER_KEY = 'e2e-business-idem-0123456789abc'

interface Pet {
  id: number
  name: string
}

let server: InProcessServer
let api: ReturnType<typeof apiClient>

beforeAll(async () => {
  server = await startInProcessServer({
    PETSTORE_API_KEYS: `enterprise:${KEY},business:${OTHER_KEY}`,
  })
  api = apiClient(server.baseUrl, KEY)
})
afterAll(async () => {
  await server?.stop()
})
afterEach(() => {
  vi.useRealTimers()
})

const create = (body: string | object, idempotencyKey?: string, key = KEY) =>
  api.post<Pet>('/pets', body, {
    key,
    headers: idempotencyKey === undefined ? {} : { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey },
  })

/** Every stored pet with this name, paging through the whole unfiltered list. */
const petsNamed = async (name: string): Promise<Pet[]> => {
  const found: Pet[] = []
  let url: string | undefined = '/pets?limit=100'
  while (url) {
    const page: ApiResponse<Pet[]> = await api.get<Pet[]>(url)
    expect(page.status).toBe(200)
    found.push(...page.json.filter((pet) => pet.name === name))
    url = nextLink(page.headers)
  }
  return found
}

const uniqueName = () => `idem-${randomUUID()}`

describe('POST /pets with Idempotency-Key', () => {
  it('replays the first 201 for a repeat: same id, same body, same Location, marked replayed', async () => {
    const name = uniqueName()
    const key = randomUUID()
    // A rejected request does not take the key: the corrected retry is a first request.
    const invalid = await create({ name, categoryId: '9223372036854775807' }, key)
    expect(invalid.status).toBe(400)
    const body = `{"name":"${name}","categoryId":9223372036854775807,"status":"sold"}`
    const created = await create(body, key)
    expect(created.status).toBe(201)
    expect(created.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBeNull()
    const replayed = await create(body, key)
    expect(replayed.status).toBe(201)
    expect(replayed.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBe('true')
    expect(replayed.text).toBe(created.text)
    expect(replayed.text).toContain('9223372036854775807')
    expect(replayed.headers.get('location')).toBe(created.headers.get('location'))
    expect(await petsNamed(name)).toHaveLength(1)
  })

  it('matches the header name in any case', async () => {
    const name = uniqueName()
    const key = randomUUID()
    const body = { name, categoryId: 1 }
    const created = await api.post<Pet>('/pets', body, { headers: { 'IDEMPOTENCY-KEY': key } })
    const replayed = await api.post<Pet>('/pets', body, { headers: { 'idempotency-key': key } })
    expect(created.status).toBe(201)
    expect(replayed.status).toBe(201)
    expect(replayed.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBe('true')
    expect(replayed.json.id).toBe(created.json.id)
  })

  it('treats the same values in another member order or spacing as the same body', async () => {
    const name = uniqueName()
    const key = randomUUID()
    const created = await create(`{"name":"${name}","categoryId":7,"status":"pending"}`, key)
    const replayed = await create(
      `{ "status" : "pending", "categoryId" : 7, "name" : "${name}" }`,
      key,
    )
    expect(replayed.status).toBe(201)
    expect(replayed.json.id).toBe(created.json.id)
    expect(await petsNamed(name)).toHaveLength(1)
  })

  it('answers 422 idempotency_key_reused for a different body and writes nothing', async () => {
    const name = uniqueName()
    const key = randomUUID()
    expect((await create({ name, categoryId: 1 }, key)).status).toBe(201)
    const reused = await create({ name, categoryId: 2 }, key)
    expect(reused.status).toBe(422)
    expect(reused.json).toMatchObject({ code: 'idempotency_key_reused', status: 422 })
    const otherName = await create({ name: `${name}-other`, categoryId: 1 }, key)
    expect(otherName.status).toBe(422)
    expect(await petsNamed(name)).toHaveLength(1)
    expect(await petsNamed(`${name}-other`)).toHaveLength(0)
  })

  it.each([
    ['empty', ''],
    ['with a space', 'two words'],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a non-ASCII character', 'cl\u00e9'],
  ])('rejects a key %s with 400 validation_failed naming the header', async (_label, value) => {
    const name = uniqueName()
    const response = await create({ name, categoryId: 1 }, value)
    expect(response.status).toBe(400)
    expect(response.json).toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ field: IDEMPOTENCY_KEY_HEADER })],
    })
    expect(await petsNamed(name)).toHaveLength(0)
  })

  it('accepts a key of exactly 255 visible characters', async () => {
    const response = await create({ name: uniqueName(), categoryId: 1 }, '~'.repeat(255))
    expect(response.status).toBe(201)
  })

  it('scopes keys to the API key: another client with the same Idempotency-Key gets its own pet', async () => {
    const name = uniqueName()
    const key = randomUUID()
    const mine = await create({ name, categoryId: 1 }, key)
    const theirs = await create({ name, categoryId: 1 }, key, OTHER_KEY)
    expect(mine.status).toBe(201)
    expect(theirs.status).toBe(201)
    expect(theirs.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBeNull()
    expect(theirs.json.id).not.toBe(mine.json.id)
    expect(await petsNamed(name)).toHaveLength(2)
  })

  it('counts a replay against the rate limit like any request', async () => {
    // Both in one UTC minute: across a minute's end the replay would see a fresh window.
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.UTC(2026, 10, 24, 12, 0, 30))
    const body = { name: uniqueName(), categoryId: 1 }
    const key = randomUUID()
    const first = await create(body, key, OTHER_KEY)
    const replay = await create(body, key, OTHER_KEY)
    expect(replay.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBe('true')
    const remaining = (response: ApiResponse) =>
      Number(response.headers.get('x-ratelimit-remaining'))
    expect(remaining(replay)).toBeLessThan(remaining(first))
  })

  it('gives concurrent repeats one pet: each answer is that 201 or 409 idempotency_in_progress', async () => {
    const name = uniqueName()
    const key = randomUUID()
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => create({ name, categoryId: 3 }, key)),
    )
    const created = answers.filter((answer) => answer.status === 201)
    const busy = answers.filter((answer) => answer.status === 409)
    expect(created.length + busy.length).toBe(answers.length)
    expect(created.length).toBeGreaterThan(0)
    expect(new Set(created.map((answer) => answer.json.id)).size).toBe(1)
    for (const answer of busy) {
      expect(answer.json).toMatchObject({ code: 'idempotency_in_progress', status: 409 })
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    }
    expect(await petsNamed(name)).toHaveLength(1)
  })

  it('forgets a key after 24 hours: the same request then creates a new pet', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const name = uniqueName()
    const key = randomUUID()
    const first = await create({ name, categoryId: 1 }, key)
    vi.setSystemTime(Date.now() + (IDEMPOTENCY_WINDOW_SECONDS - 60) * 1000)
    const withinWindow = await create({ name, categoryId: 1 }, key)
    expect(withinWindow.json.id).toBe(first.json.id)
    vi.setSystemTime(Date.now() + 120 * 1000)
    const afterWindow = await create({ name, categoryId: 1 }, key)
    expect(afterWindow.status).toBe(201)
    expect(afterWindow.headers.get(IDEMPOTENT_REPLAYED_HEADER)).toBeNull()
    expect(afterWindow.json.id).not.toBe(first.json.id)
    expect(await petsNamed(name)).toHaveLength(2)
  })

  it('leaves requests without the header as they were: each makes a pet', async () => {
    const name = uniqueName()
    await create({ name, categoryId: 1 })
    await create({ name, categoryId: 1 })
    expect(await petsNamed(name)).toHaveLength(2)
  })
})
