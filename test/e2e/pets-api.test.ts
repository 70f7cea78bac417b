import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ERROR_STATUS } from '#shared/errors/error-codes.ts'
import {
  apiClient,
  type InProcessServer,
  nextLink,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * The API of docs/api.md over real HTTP against the local server (`startLocal`, which `npm start`
 * runs, in this process: random port, in-memory data).
 * The Enterprise key keeps these functional checks clear of the Free plan's rate limits.
 */
const KEY = 'e2e-enterprise-0123456789abcdef'
const FREE_KEY = 'e2e-free-0123456789abcdef0123'

interface Pet {
  id: number
  name: string
  categoryId: number
  status?: string
}
interface ErrorBody {
  code: string
  message: string
  status: number
  details?: { field: string; message: string }[]
  requestId?: string
}

let server: InProcessServer
let api: ReturnType<typeof apiClient>

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY},free:${FREE_KEY}` })
  api = apiClient(server.baseUrl, KEY)
})
afterAll(async () => {
  await server?.stop()
})

const expectError = (
  response: { status: number; headers: Headers; json: unknown; text: string },
  status: number,
  code: string,
) => {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/json/)
  const body = response.json as ErrorBody
  expect(body).toMatchObject({ code, status })
  expect(typeof body.message).toBe('string')
  expect(body.message.length).toBeGreaterThan(0)
  expect(ERROR_STATUS[code as keyof typeof ERROR_STATUS]).toBe(status)
  expect(response.text).not.toMatch(/at .+\.ts:\d+|Exception|petstore-local-pets/)
  return body
}

describe('POST /v1/pets (createPet)', () => {
  it('creates a pet: 201, the pet with its assigned id, a Location that serves it', async () => {
    const created = await api.post<Pet>('/pets', {
      name: 'Rex',
      categoryId: 7,
      status: 'available',
    })
    expect(created.status).toBe(201)
    expect(created.headers.get('content-type')).toMatch(/^application\/json/)
    expect(created.json).toEqual({
      id: expect.any(Number),
      name: 'Rex',
      categoryId: 7,
      status: 'available',
    })
    expect(created.json.id).toSatisfy(Number.isSafeInteger)
    expect(created.json.id).toBeGreaterThan(0)
    const location = created.headers.get('location')
    expect(location).toBe(`${server.baseUrl}/pets/${created.json.id}`)
    const fetched = await api.get<Pet>(location as string)
    expect(fetched.status).toBe(200)
    expect(fetched.json).toEqual(created.json)
  })

  it('keeps every digit of an int64 categoryId, in and out', async () => {
    for (const categoryId of ['9223372036854775807', '-9223372036854775808', '9007199254740993']) {
      const created = await api.post('/pets', `{"name":"Big","categoryId":${categoryId}}`)
      expect(created.status).toBe(201)
      expect(created.text).toContain(`"categoryId":${categoryId}`)
      const id = (created.json as Pet).id
      const fetched = await api.get(`/pets/${id}`)
      expect(fetched.text).toContain(`"categoryId":${categoryId}`)
    }
  })

  it('stores a pet without status without inventing one', async () => {
    const created = await api.post<Pet>('/pets', { name: 'Nameless status', categoryId: 1 })
    expect(created.status).toBe(201)
    expect(created.json).not.toHaveProperty('status')
    expect((await api.get<Pet>(`/pets/${created.json.id}`)).json).not.toHaveProperty('status')
  })

  it('gives distinct ids to concurrent creates', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        api.post<Pet>('/pets', { name: `Twin ${i}`, categoryId: i }),
      ),
    )
    expect(results.map((result) => result.status)).toEqual(results.map(() => 201))
    expect(new Set(results.map((result) => result.json.id)).size).toBe(40)
  })

  it.each([
    [{ categoryId: 1 }, 'name'],
    [{ name: 'x' }, 'categoryId'],
    [{ name: '', categoryId: 1 }, 'name'],
    [{ name: '   ', categoryId: 1 }, 'name'],
    [{ name: 'x'.repeat(201), categoryId: 1 }, 'name'],
    [{ name: 42, categoryId: 1 }, 'name'],
    [{ name: 'x', categoryId: 1.5 }, 'categoryId'],
    [{ name: 'x', categoryId: '12' }, 'categoryId'],
    [{ name: 'x', categoryId: 1, status: 'lost' }, 'status'],
    [{ name: 'x', categoryId: 1, id: 5 }, 'id'],
    [{ name: 'x', categoryId: 1, color: 'red' }, 'color'],
  ])('rejects %j with 400 validation_failed naming %s', async (body, field) => {
    const response = await api.post('/pets', body)
    const error = expectError(response, 400, 'validation_failed')
    expect(error.details?.map((detail) => detail.field)).toContain(field)
  })

  it('rejects categoryId outside int64 with 400', async () => {
    for (const value of ['9223372036854775808', '-9223372036854775809', '1e30']) {
      const response = await api.post('/pets', `{"name":"x","categoryId":${value}}`)
      expectError(response, 400, 'validation_failed')
    }
  })

  it('names every broken field at once', async () => {
    const error = expectError(
      await api.post('/pets', { name: '', status: 'x' }),
      400,
      'validation_failed',
    )
    expect(error.details?.map((detail) => detail.field).sort()).toEqual([
      'categoryId',
      'name',
      'status',
    ])
  })

  it('answers 400 invalid_json for malformed JSON, non-objects and a missing body', async () => {
    expectError(await api.post('/pets', '{"name": "Rex",'), 400, 'invalid_json')
    expectError(await api.post('/pets', '[{"name":"Rex","categoryId":1}]'), 400, 'invalid_json')
    expectError(await api.post('/pets', 'null'), 400, 'invalid_json')
    expectError(
      await api.post('/pets', undefined, { headers: { 'Content-Type': 'application/json' } }),
      400,
      'invalid_json',
    )
  })

  it('answers 415 for a body that is not application/json', async () => {
    const response = await api.post('/pets', 'name=Rex', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    })
    expectError(response, 415, 'unsupported_media_type')
  })

  it('answers 413 for a body over 16 KiB, and accepts one just under', async () => {
    const padding = (size: number) =>
      `{"name":"Rex","categoryId":1,"status":"sold"${' '.repeat(size)}}`
    const base = Buffer.byteLength(padding(0))
    expectError(await api.post('/pets', padding(16 * 1024 - base + 1)), 413, 'payload_too_large')
    expect((await api.post('/pets', padding(16 * 1024 - base))).status).toBe(201)
  })

  it('answers 401 without a valid key', async () => {
    const body = { name: 'Rex', categoryId: 1 }
    expectError(await api.post('/pets', body, { key: null }), 401, 'unauthorized')
    expectError(
      await api.post('/pets', body, { key: 'unknown-key-0123456789abcdef' }),
      401,
      'unauthorized',
    )
  })
})

describe('GET /v1/pets (listPets)', () => {
  let sold: Pet[]

  beforeAll(async () => {
    sold = []
    for (let i = 0; i < 23; i += 1) {
      sold.push(
        (await api.post<Pet>('/pets', { name: `Sold ${i}`, categoryId: 3, status: 'sold' })).json,
      )
    }
  })

  it('returns a plain JSON array of at most 20 pets by default', async () => {
    const response = await api.get<Pet[]>('/pets')
    expect(response.status).toBe(200)
    expect(response.json).toBeInstanceOf(Array)
    expect(response.json.length).toBe(20)
  })

  it('filters by status, in id order, and pages with Link and X-Next-Cursor until every pet is seen once', async () => {
    const seen: Pet[] = []
    let url: string | undefined = '/pets?status=sold&limit=5'
    let pages = 0
    while (url) {
      const response: Awaited<ReturnType<typeof api.get<Pet[]>>> = await api.get<Pet[]>(url)
      expect(response.status).toBe(200)
      expect(response.json.length).toBeLessThanOrEqual(5)
      seen.push(...response.json)
      url = nextLink(response.headers)
      if (url) {
        expect(`${new URL(url).origin}${new URL(url).pathname}`).toBe(`${server.baseUrl}/pets`)
        expect(new URL(url).searchParams.get('cursor')).toBe(response.headers.get('x-next-cursor'))
      } else {
        expect(response.headers.get('x-next-cursor')).toBeNull()
      }
      pages += 1
    }
    const seenIds = seen.map((pet) => pet.id)
    expect(pages).toBe(Math.ceil(seen.length / 5))
    expect(seen.filter((pet) => pet.status !== 'sold')).toEqual([])
    expect(seenIds).toEqual([...new Set(seenIds)].sort((a, b) => a - b))
    for (const pet of sold) expect(seenIds).toContain(pet.id)
  })

  it('pages the unfiltered list visiting each pet exactly once', async () => {
    const ids: number[] = []
    let url: string | undefined = '/pets?limit=7'
    while (url) {
      const response: Awaited<ReturnType<typeof api.get<Pet[]>>> = await api.get<Pet[]>(url)
      ids.push(...response.json.map((pet) => pet.id))
      url = nextLink(response.headers)
    }
    expect(new Set(ids).size).toBe(ids.length)
    for (const pet of sold) expect(ids).toContain(pet.id)
  })

  it.each([
    'limit=0',
    'limit=101',
    'limit=abc',
    'limit=1.5',
    'limit=',
    'limit=5&limit=6',
    'status=lost',
  ])('rejects ?%s with 400 validation_failed', async (query) => {
    const error = expectError(await api.get(`/pets?${query}`), 400, 'validation_failed')
    expect(error.details?.[0]?.field).toBe(query.split('=')[0])
  })

  it('accepts the limit bounds 1 and 100', async () => {
    expect((await api.get<Pet[]>('/pets?limit=1')).json.length).toBe(1)
    expect((await api.get('/pets?limit=100')).status).toBe(200)
  })

  it('rejects a tampered cursor, and a cursor used with another status', async () => {
    const first = await api.get('/pets?status=sold&limit=2')
    const cursor = first.headers.get('x-next-cursor') as string
    expect(cursor).toBeTruthy()
    const tampered = `${cursor.slice(0, 3)}${cursor[3] === 'A' ? 'B' : 'A'}${cursor.slice(4)}`
    const error = expectError(
      await api.get(`/pets?status=sold&cursor=${encodeURIComponent(tampered)}`),
      400,
      'validation_failed',
    )
    expect(error.details?.[0]?.field).toBe('cursor')
    expectError(
      await api.get(`/pets?status=pending&cursor=${encodeURIComponent(cursor)}`),
      400,
      'validation_failed',
    )
    expectError(
      await api.get(`/pets?cursor=${encodeURIComponent(cursor)}`),
      400,
      'validation_failed',
    )
  })

  it('answers 401 without a valid key', async () => {
    expectError(await api.get('/pets', { key: null }), 401, 'unauthorized')
  })
})

describe('GET /v1/pets/{petId} (getPet, deprecated)', () => {
  it('returns the pet with Deprecation, Sunset and successor Link headers', async () => {
    const created = await api.post<Pet>('/pets', {
      name: 'Old way',
      categoryId: 2,
      status: 'pending',
    })
    const response = await api.get<Pet>(`/pets/${created.json.id}`)
    expect(response.status).toBe(200)
    expect(response.json).toEqual(created.json)
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/)
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT')
    expect(response.headers.get('link')).toBe(`<${server.baseUrl}/pets>; rel="successor-version"`)
  })

  it('answers 404 pet_not_found for an id no pet has, still with the deprecation headers', async () => {
    const response = await api.get('/pets/999999999')
    expectError(response, 404, 'pet_not_found')
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT')
    // Valid int64 but beyond any id the service assigns (ids stay below 2^53).
    expectError(await api.get('/pets/9223372036854775807'), 404, 'pet_not_found')
  })

  it.each(['abc', '0', '-1', '1.5', '1e3', '9223372036854775808', '%E0%A4%A', '%20', '1%2F2'])(
    'answers 400 validation_failed for petId %s',
    async (petId) => {
      const error = expectError(await api.get(`/pets/${petId}`), 400, 'validation_failed')
      expect(error.details?.[0]?.field).toBe('petId')
    },
  )

  it('answers 401 without a valid key', async () => {
    expectError(await api.get('/pets/1', { key: null }), 401, 'unauthorized')
  })
})

describe('authentication', () => {
  it.each([
    ['no header', {}],
    ['Basic scheme', { Authorization: `Basic ${KEY}` }],
    ['bare key', { Authorization: KEY }],
    ['Bearer without a key', { Authorization: 'Bearer' }],
    ['unknown key', { Authorization: 'Bearer not-a-real-key-0123456789' }],
    ['oversized header', { Authorization: `Bearer ${'a'.repeat(5000)}` }],
  ])('answers 401 unauthorized for %s, with a Bearer challenge', async (_, headers) => {
    const response = await api.get('/pets', { key: null, headers })
    expectError(response, 401, 'unauthorized')
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/)
  })

  it('accepts the scheme in any case and extra spaces before the key', async () => {
    expect(
      (await api.get('/pets?limit=1', { key: null, headers: { Authorization: `bearer ${KEY}` } }))
        .status,
    ).toBe(200)
    expect(
      (await api.get('/pets?limit=1', { key: null, headers: { Authorization: `Bearer   ${KEY}` } }))
        .status,
    ).toBe(200)
  })
})

describe('unknown routes', () => {
  it.each([
    ['GET', '/store/orders'],
    ['DELETE', '/pets'],
    ['PUT', '/pets'],
    ['GET', '/pets/1/owner'],
    ['GET', '/'],
  ])('%s %s answers 404 route_not_found, with or without a key', async (method, path) => {
    expectError(await api.request(method, path), 404, 'route_not_found')
    expectError(await api.request(method, path, { key: null }), 404, 'route_not_found')
  })

  it('HEAD /pets answers 404 as API Gateway answers a method the resource does not define (docs/api.md)', async () => {
    const head = await fetch(`${server.baseUrl}/pets`, {
      method: 'HEAD',
      headers: { Authorization: `Bearer ${KEY}` },
    })
    expect(head.status).toBe(404)
    expect(head.headers.get('x-amzn-RequestId')).toMatch(/^[0-9a-f-]{36}$/)
    expect(await head.text()).toBe('')
    expect((await api.get('/pets?limit=1')).status).toBe(200)
  })

  it('serves nothing outside /v1', async () => {
    expectError(await api.get(server.baseUrl.replace('/v1', '/v2/pets')), 404, 'route_not_found')
  })
})
