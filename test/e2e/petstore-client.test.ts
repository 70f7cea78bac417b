import { randomUUID } from 'node:crypto'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type EmbeddedDynamo, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { LOCAL_TABLES } from '#local/local-environment.ts'
import { contractCheckingFetch } from '#openapi/contract-validator.ts'
import {
  type AttemptEvent,
  createPetstoreClient,
  type Pet,
  type PetStatus,
  type PetstoreApiError,
  type PetstoreClientOptions,
} from '#openapi/petstore-client.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { DYNAMO_CLIENT_LIMITS } from '#shared/data/dynamo-client.ts'
import { type FaultProxy, startFaultProxy } from '#test/support/fault-proxy.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * The client against the local server (in this process), every answer checked against the
 * contract. Only `Date` is faked, as in rate-limits.test.ts: the gateway, the functions' limiter
 * and the client share one clock, and the client's `sleep` moves it, so waiting out a minute
 * window takes no real minute. The server's DynamoDB sits behind a fault proxy, so a create can
 * be made to fail after its pet was written, and the client reaches the server through an HTTP
 * proxy that can drop a connection after the server answered.
 */
const FREE_KEY = `e2e-client-free-${randomUUID()}`
const KEY = `e2e-client-enterprise-${randomUUID()}`
const MINUTE_MS = 60_000

let dynamo: EmbeddedDynamo
let faults: FaultProxy
let server: InProcessServer
let dropper: AnswerDropper

/** A sleep on the fake clock: time moves once every call that can run has run. */
const fakeSleep = async (ms: number) => {
  const until = Date.now() + ms
  await new Promise((resolve) => setImmediate(resolve))
  vi.setSystemTime(Math.max(Date.now(), until))
}

const clientFor = (apiKey: string, options: Partial<PetstoreClientOptions> = {}) => {
  const events: AttemptEvent[] = []
  const client = createPetstoreClient({
    baseUrl: server.baseUrl,
    apiKey,
    fetch: contractCheckingFetch(),
    sleep: fakeSleep,
    onAttempt: (event) => events.push(event),
    ...options,
  })
  return { client, events }
}

interface AnswerDropper {
  baseUrl: string
  /** The next POST /pets is forwarded, answered by the server, and its connection dropped. */
  dropNextCreateAnswer(): void
  dropped: number
  close(): Promise<void>
}

/** An HTTP proxy in front of the local server that can lose the server's answer to a create. */
const startAnswerDropper = async (target: string): Promise<AnswerDropper> => {
  const upstream = new URL(target)
  let armed = false
  const state = { dropped: 0 }
  const proxy: Server = createServer((req, res) => {
    const drop = armed && req.method === 'POST' && req.url?.endsWith('/pets')
    if (drop) armed = false
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        if (!drop) {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
          return
        }
        // The server did the work; the client never hears of it.
        answer.resume()
        answer.on('end', () => {
          state.dropped += 1
          req.socket.destroy()
        })
      },
    )
    forward.on('error', () => req.socket.destroy())
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const { port } = proxy.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}${upstream.pathname}`,
    dropNextCreateAnswer: () => {
      armed = true
    },
    get dropped() {
      return state.dropped
    },
    close: async () => {
      proxy.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
    },
  }
}

/** Every stored pet with this name, through the plain test client (no retries). */
const storedPetsNamed = async (name: string): Promise<Pet[]> => {
  const { client } = clientFor(KEY)
  const found: Pet[] = []
  for await (const pet of client.pets()) if (pet.name === name) found.push(pet)
  return found
}

const rejectionOf = async (promise: Promise<unknown>): Promise<PetstoreApiError> => {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  )
  expect(error).toMatchObject({ name: 'PetstoreApiError' })
  return error as PetstoreApiError
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Date.UTC(2026, 10, 22, 12, 0, 5))
  dynamo = await startEmbeddedDynamo(IN_MEMORY)
  faults = await startFaultProxy(dynamo.endpoint)
  server = await startInProcessServer({
    DYNAMODB_ENDPOINT: faults.endpoint,
    PETSTORE_API_KEYS: `free:${FREE_KEY},enterprise:${KEY}`,
  })
  dropper = await startAnswerDropper(server.baseUrl)
})
afterAll(async () => {
  await dropper?.close()
  await server?.stop()
  await faults?.close()
  await dynamo?.close()
  vi.useRealTimers()
})

describe('rate limits', () => {
  it('makes 70 sequential listPets on a Free key (60 a minute) all succeed, waiting across the minute boundary', async () => {
    // 5 s into a fresh UTC minute: the 60th answer says Remaining 0 until the next minute.
    const minuteStart = Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS
    vi.setSystemTime(minuteStart + 5_000)
    const { client, events } = clientFor(FREE_KEY)

    for (let call = 0; call < 70; call += 1) await client.listPets({ limit: 1 })

    expect(PLAN_LIMITS.free.perMinute).toBe(60)
    expect(events).toHaveLength(70)
    expect(events.filter((event) => event.status !== 200 || event.retry)).toEqual([])
    // One pause, announced by the 60th answer: the 55 s left of the first minute.
    expect(events.filter((event) => event.waitMs > 0)).toEqual([
      expect.objectContaining({ waitMs: 55_000 }),
    ])
    expect(events.findIndex((event) => event.waitMs > 0)).toBe(59)
    expect(Date.now()).toBe(minuteStart + MINUTE_MS)

    // Never suspended: the key is served, 10 of its second minute used.
    const after = await apiClient(server.baseUrl, FREE_KEY).get('/pets?limit=1')
    expect(after.status).toBe(200)
    expect(after.headers.get('x-ratelimit-remaining')).toBe('49')
  })
})

describe('paging', () => {
  it('yields every pet exactly once across pages, filtered and unfiltered', async () => {
    const name = `paging-${randomUUID()}`
    const { client, events } = clientFor(KEY)
    const created: Pet[] = []
    for (let index = 0; index < 23; index += 1) {
      const status: PetStatus = index % 3 === 0 ? 'pending' : 'available'
      created.push(await client.createPet({ name, categoryId: index, status }))
    }
    events.length = 0

    const all: Pet[] = []
    for await (const pet of client.pets({ limit: 4 })) all.push(pet)
    const allIds = all.map((pet) => pet.id)
    expect(new Set(allIds).size).toBe(allIds.length)
    expect(all.filter((pet) => pet.name === name)).toEqual(
      expect.arrayContaining(created.map((pet) => expect.objectContaining(pet))),
    )
    expect(all.filter((pet) => pet.name === name)).toHaveLength(created.length)
    expect(events.length).toBeGreaterThanOrEqual(Math.ceil(created.length / 4))

    const pending: Pet[] = []
    for await (const pet of client.pets({ status: 'pending', limit: 3 })) pending.push(pet)
    expect(pending.filter((pet) => pet.name === name).map((pet) => pet.id)).toEqual(
      created.filter((pet) => pet.status === 'pending').map((pet) => pet.id),
    )
  })
})

describe('a create retried after a failure makes exactly one pet', () => {
  it('after a 503: the server wrote the pet, then its datastore answers were lost', async () => {
    const name = `retried-503-${randomUUID()}`
    const { client, events } = clientFor(KEY)
    faults.setRule({
      operation: 'PutItem',
      matches: (body) => body.includes(LOCAL_TABLES.pets) && body.includes(name),
      kind: 'lost-answer',
      times: DYNAMO_CLIENT_LIMITS.maxAttempts,
    })
    const pet = await client.createPet({ name, categoryId: 1 })
    faults.setRule(undefined)

    expect(events.map((event) => [event.status, event.code, event.retry])).toEqual([
      [503, 'service_unavailable', true],
      [201, undefined, false],
    ])
    expect(await storedPetsNamed(name)).toEqual([pet])
  })

  it('after a dropped connection: the server answered 201, the client never heard it', async () => {
    const name = `retried-drop-${randomUUID()}`
    const { client, events } = clientFor(KEY, { baseUrl: dropper.baseUrl })
    const droppedBefore = dropper.dropped
    dropper.dropNextCreateAnswer()
    const pet = await client.createPet({ name, categoryId: 1, status: 'sold' })

    expect(dropper.dropped).toBe(droppedBefore + 1)
    expect(events.map((event) => [event.status, event.retry])).toEqual([
      [undefined, true],
      [201, false],
    ])
    expect(events[0]?.error).toBeInstanceOf(TypeError)
    expect(await storedPetsNamed(name)).toEqual([pet])
  })
})

describe('errors that retrying cannot fix', () => {
  it.each([
    [400, 'validation_failed', () => clientFor(KEY).client.createPet({ name: ' ', categoryId: 1 })],
    [400, 'validation_failed', () => clientFor(KEY).client.listPets({ limit: 0 })],
    [401, 'unauthorized', () => clientFor('not-a-key-of-this-server-000').client.listPets()],
    [404, 'pet_not_found', () => clientFor(KEY).client.getPet(987_654_321)],
  ])('%i %s surfaces at once as a typed error', async (status, code, call) => {
    const started = Date.now()
    const error = await rejectionOf(call())
    expect(error).toMatchObject({ status, code, body: { status, code } })
    expect(error.requestId).toMatch(/\S/)
    expect(error.response?.status).toBe(status)
    expect(Date.now()).toBe(started)
  })

  it('makes one request for each of them', async () => {
    const { client, events } = clientFor(KEY)
    await rejectionOf(client.getPet(987_654_321))
    await rejectionOf(client.createPet({ name: '', categoryId: 1 }))
    expect(events.map((event) => [event.status, event.retry, event.waitMs])).toEqual([
      [404, false, 0],
      [400, false, 0],
    ])
  })
})
