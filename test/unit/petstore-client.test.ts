import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  type AttemptEvent,
  createPetstoreClient,
  PetstoreApiError,
  type PetstoreClientOptions,
} from '#openapi/petstore-client.ts'

/**
 * The client's retry and rate-limit rules, driven by a scripted fetch and a fake clock: `sleep`
 * moves the clock instead of waiting, so every wait is asserted to the millisecond.
 */
const START = Date.UTC(2026, 10, 22, 12, 0, 5)
const START_SECONDS = START / 1000
const NETWORK_FAILURE = Symbol('network failure')

interface Answer {
  status: number
  body?: unknown
  headers?: Record<string, string>
}
type Script = Answer | typeof NETWORK_FAILURE

interface SentRequest {
  method: string
  path: string
  idempotencyKey: string | null
  body: string
  at: number
}

const harness = (script: Script[], options: Partial<PetstoreClientOptions> = {}) => {
  let clock = START
  const waits: number[] = []
  const sent: SentRequest[] = []
  const events: AttemptEvent[] = []
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    const at = clock
    sent.push({
      method: request.method,
      path: `${url.pathname}${url.search}`,
      idempotencyKey: request.headers.get('Idempotency-Key'),
      body: await request.text(),
      at,
    })
    const next = script.shift()
    if (next === undefined) throw new Error(`unscripted request ${request.method} ${request.url}`)
    if (next === NETWORK_FAILURE) {
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      })
    }
    return new Response(next.body === undefined ? null : JSON.stringify(next.body), {
      status: next.status,
      headers: { 'Content-Type': 'application/json', ...next.headers },
    })
  }
  const client = createPetstoreClient({
    baseUrl: 'https://petstore.test/v1',
    apiKey: 'unit-test-key-0123456789',
    fetch,
    now: () => clock,
    // Time moves once every call that can run has run, as it would while the sleeper waits.
    sleep: async (ms) => {
      waits.push(ms)
      const until = clock + ms
      await new Promise((resolve) => setImmediate(resolve))
      clock = Math.max(clock, until)
    },
    random: () => 0,
    onAttempt: (event) => events.push(event),
    ...options,
  })
  return {
    client,
    waits,
    sent,
    events,
    now: () => clock,
    advance: (ms: number) => {
      clock += ms
    },
  }
}

const pet = (id: number) => ({ id, name: `pet-${id}`, categoryId: 1 })
const ok = (body: unknown, headers: Record<string, string> = {}): Answer => ({
  status: 200,
  body,
  headers,
})
const failure = (status: number, code: string, headers: Record<string, string> = {}): Answer => ({
  status,
  body: { code, message: `a ${code}`, status, requestId: `req-${code}` },
  headers,
})
const budget = (remaining: number, resetSeconds: number) => ({
  'X-RateLimit-Limit': '60',
  'X-RateLimit-Remaining': String(remaining),
  'X-RateLimit-Reset': String(resetSeconds),
})
const NEXT_MINUTE = START_SECONDS + 55

const rejectionOf = async (promise: Promise<unknown>): Promise<PetstoreApiError> => {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  )
  expect(error).toBeInstanceOf(PetstoreApiError)
  return error as PetstoreApiError
}

describe('429: Retry-After, then exponential backoff', () => {
  it('waits Retry-After plus the first backoff step, never less, for any jitter', async () => {
    for (const random of [0, 0.5, 0.999_999]) {
      const run = harness([failure(429, 'rate_limited', { 'Retry-After': '7' }), ok([pet(1)])], {
        random: () => random,
      })
      expect((await run.client.listPets()).pets).toEqual([pet(1)])
      expect(run.waits).toHaveLength(1)
      expect(run.waits[0]).toBeGreaterThanOrEqual(7_000 + 250)
      expect(run.waits[0]).toBeLessThanOrEqual(7_000 + 500)
      expect(run.sent[1]?.at).toBe(START + (run.waits[0] as number))
    }
  })

  it('reads Retry-After as an HTTP date too', async () => {
    const at = new Date(START + 12_000).toUTCString()
    const run = harness([failure(429, 'rate_limited', { 'Retry-After': at }), ok([])])
    await run.client.listPets()
    expect(run.waits).toEqual([12_000 + 250])
  })

  it('adds a doubling backoff on each repeat: Retry-After is the floor', async () => {
    const run = harness([
      failure(429, 'rate_limited', { 'Retry-After': '2' }),
      failure(429, 'rate_limited', { 'Retry-After': '2' }),
      failure(429, 'rate_limited', { 'Retry-After': '2' }),
      ok([]),
    ])
    await run.client.listPets()
    expect(run.waits).toEqual([2_000 + 250, 2_000 + 500, 2_000 + 1_000])
    expect(run.events.map((event) => [event.attempt, event.status, event.retry])).toEqual([
      [1, 429, true],
      [2, 429, true],
      [3, 429, true],
      [4, 200, false],
    ])
  })

  it('retries a create after a 429 too: a refused request did nothing', async () => {
    const run = harness([
      failure(429, 'rate_limited', { 'Retry-After': '1' }),
      { status: 201, body: pet(7) },
    ])
    expect(await run.client.createPet({ name: 'pet-7', categoryId: 1 })).toEqual(pet(7))
    expect(run.sent).toHaveLength(2)
  })

  it('gives up when the next wait would pass maxWaitMs, with the 429 as a typed error', async () => {
    const tooLong = () => failure(429, 'rate_limited', { 'Retry-After': '30' })
    const run = harness([tooLong(), tooLong(), tooLong()], { maxWaitMs: 60_000 })
    const error = await rejectionOf(run.client.listPets())
    // 30 250 ms waited; another 30 500 would pass 60 s.
    expect(run.waits).toEqual([30_250])
    expect(run.sent).toHaveLength(2)
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: 30_000 })
    expect(error.response?.status).toBe(429)
  })

  it('holds every later call until Retry-After has passed', async () => {
    const run = harness([failure(429, 'rate_limited', { 'Retry-After': '40' }), ok([pet(2)])], {
      maxAttempts: 1,
    })
    await rejectionOf(run.client.listPets())
    expect(run.events[0]).toMatchObject({ status: 429, retry: false, waitMs: 40_000 })
    await run.client.listPets()
    expect(run.waits).toEqual([40_000])
    expect(run.sent[1]?.at).toBe(START + 40_000)
  })
})

describe('exponential backoff with jitter', () => {
  it('doubles the ceiling with each retry, waits between half of it and all of it, capped by maxDelayMs', async () => {
    const low = harness(Array(6).fill(NETWORK_FAILURE), {
      maxAttempts: 6,
      baseDelayMs: 500,
      maxDelayMs: 3_000,
    })
    await expect(low.client.listPets()).rejects.toThrow('fetch failed')
    expect(low.waits).toEqual([250, 500, 1_000, 1_500, 1_500])

    const high = harness(Array(6).fill(NETWORK_FAILURE), {
      maxAttempts: 6,
      baseDelayMs: 500,
      maxDelayMs: 3_000,
      random: () => 0.999_999,
    })
    await expect(high.client.listPets()).rejects.toThrow('fetch failed')
    expect(high.waits).toEqual([500, 1_000, 2_000, 3_000, 3_000])
  })

  it('stops after maxAttempts and surfaces the last answer', async () => {
    const unavailable = () => failure(503, 'service_unavailable', { 'Retry-After': '1' })
    const run = harness([unavailable(), unavailable(), unavailable()], { maxAttempts: 3 })
    const error = await rejectionOf(run.client.listPets())
    expect(error).toMatchObject({ status: 503, code: 'service_unavailable' })
    expect(run.sent).toHaveLength(3)
    expect(run.waits).toEqual([1_250, 1_500])
    expect(run.events.map((event) => event.retry)).toEqual([true, true, false])
  })
})

describe('X-RateLimit-Remaining: 0', () => {
  it('waits until X-RateLimit-Reset before the next request instead of collecting a 429', async () => {
    const run = harness([
      ok([pet(1)], budget(0, NEXT_MINUTE)),
      ok([pet(2)], budget(59, NEXT_MINUTE + 60)),
    ])
    await run.client.listPets()
    expect(run.events[0]).toMatchObject({ status: 200, retry: false, waitMs: 55_000 })
    expect(run.waits).toEqual([])
    await run.client.listPets()
    expect(run.waits).toEqual([55_000])
    expect(run.sent[1]?.at).toBe(NEXT_MINUTE * 1000)
  })

  it('fails without sending when the reset is further away than the call may wait', async () => {
    const midnight = Date.UTC(2026, 10, 23) / 1000
    const run = harness([ok([pet(1)], budget(0, midnight))])
    await run.client.listPets()
    const error = await rejectionOf(run.client.listPets())
    expect(run.sent).toHaveLength(1)
    expect(error).toMatchObject({ status: 429, code: 'quota_exceeded', response: undefined })
    expect(error.retryAfterMs).toBe(midnight * 1000 - START)
    expect(error.message).toMatch(/^429 quota_exceeded: Not sent/)
  })

  it('never sends concurrent calls beyond the budget the last answer reported', async () => {
    const run = harness([
      ok([pet(1)], budget(1, NEXT_MINUTE)),
      ok([pet(2)], budget(0, NEXT_MINUTE)),
      ok([pet(3)], budget(59, NEXT_MINUTE + 60)),
    ])
    const pages = await Promise.all([
      run.client.listPets(),
      run.client.listPets(),
      run.client.listPets(),
    ])
    expect(pages.flatMap((page) => page.pets)).toHaveLength(3)
    // The first call learns the budget (1 left) while the others wait; one goes, one waits.
    expect(run.sent.map((request) => request.at)).toEqual([START, START, NEXT_MINUTE * 1000])
    expect(run.waits).toEqual([55_000])
  })
})

describe('key_suspended', () => {
  const suspended = () => failure(429, 'key_suspended', { 'Retry-After': '900' })

  it('gives up at once by default, and later calls fail without a request until it ends', async () => {
    const run = harness([suspended(), ok([pet(1)])])
    const first = await rejectionOf(run.client.listPets())
    expect(first).toMatchObject({ code: 'key_suspended', status: 429, retryAfterMs: 900_000 })
    expect(run.events[0]).toMatchObject({ retry: false, waitMs: 900_000 })

    run.advance(600_000)
    const second = await rejectionOf(run.client.createPet({ name: 'x', categoryId: 1 }))
    expect(second).toMatchObject({ code: 'key_suspended', response: undefined })
    expect(second.message).toMatch(
      /^429 key_suspended: Not sent: the key is suspended for 300 s more/,
    )
    expect(second.retryAfterMs).toBe(300_000)
    expect(run.sent).toHaveLength(1)
    expect(run.waits).toEqual([])

    run.advance(300_000)
    await run.client.listPets()
    expect(run.sent).toHaveLength(2)
  })

  it('waits the whole Retry-After when configured to and allowed that long', async () => {
    const run = harness([suspended(), ok([pet(1)])], {
      whenSuspended: 'wait',
      maxWaitMs: 16 * 60_000,
    })
    await run.client.listPets()
    expect(run.waits).toEqual([900_000 + 250])
  })

  it('gives up anyway when the suspension is longer than maxWaitMs', async () => {
    const run = harness([suspended()], { whenSuspended: 'wait' })
    await rejectionOf(run.client.listPets())
    expect(run.sent).toHaveLength(1)
    expect(run.waits).toEqual([])
  })
})

describe('safe retries', () => {
  it('sends a new Idempotency-Key with every create and repeats it on the retry after a 503', async () => {
    const run = harness([
      failure(503, 'service_unavailable', { 'Retry-After': '1' }),
      { status: 201, body: pet(5) },
      { status: 201, body: pet(6) },
    ])
    await run.client.createPet({ name: 'pet-5', categoryId: 1 })
    await run.client.createPet({ name: 'pet-6', categoryId: 1 })
    const [first, retry, other] = run.sent
    expect(first?.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
    expect(retry?.idempotencyKey).toBe(first?.idempotencyKey)
    expect(retry?.body).toBe(first?.body)
    expect(other?.idempotencyKey).not.toBe(first?.idempotencyKey)
    expect(run.waits).toEqual([1_250])
  })

  it("uses the caller's Idempotency-Key as given", async () => {
    const run = harness([{ status: 201, body: pet(5) }])
    await run.client.createPet({ name: 'pet-5', categoryId: 1 }, { idempotencyKey: 'order-4711' })
    expect(run.sent[0]?.idempotencyKey).toBe('order-4711')
  })

  it('retries a create after a network failure and after 409 idempotency_in_progress', async () => {
    const run = harness([
      NETWORK_FAILURE,
      failure(409, 'idempotency_in_progress', { 'Retry-After': '3' }),
      { status: 201, body: pet(8) },
    ])
    expect(await run.client.createPet({ name: 'pet-8', categoryId: 1 })).toEqual(pet(8))
    expect(new Set(run.sent.map((request) => request.idempotencyKey)).size).toBe(1)
    expect(run.waits).toEqual([250, 3_000 + 500])
    expect(run.events.map((event) => [event.status, event.code, event.retry])).toEqual([
      [undefined, undefined, true],
      [409, 'idempotency_in_progress', true],
      [201, undefined, false],
    ])
    expect(run.events[0]?.error).toBeInstanceOf(TypeError)
  })

  it('retries a GET after network failures and a 503', async () => {
    const run = harness([
      NETWORK_FAILURE,
      failure(503, 'service_unavailable', { 'Retry-After': '1' }),
      ok(pet(3)),
    ])
    expect(await run.client.getPet(3)).toEqual(pet(3))
    expect(run.sent.map((request) => request.path)).toEqual(Array(3).fill('/v1/pets/3'))
    expect(run.waits).toEqual([250, 1_000 + 500])
  })

  it('never repeats a POST without an Idempotency-Key (the raw client): after a 503 or a network failure', async () => {
    const run = harness([
      failure(503, 'service_unavailable', { 'Retry-After': '1' }),
      NETWORK_FAILURE,
    ])
    const { error, response } = await run.client.raw.POST('/pets', {
      body: { name: 'once', categoryId: 1 },
    })
    expect(response.status).toBe(503)
    expect(error).toMatchObject({ code: 'service_unavailable' })
    expect(run.sent).toHaveLength(1)
    expect(run.sent[0]?.idempotencyKey).toBeNull()

    await expect(
      run.client.raw.POST('/pets', { body: { name: 'once', categoryId: 1 } }),
    ).rejects.toThrow('fetch failed')
    expect(run.sent).toHaveLength(2)
    expect(run.waits).toEqual([])
    expect(run.events.map((event) => event.retry)).toEqual([false, false])
  })

  it('stops waiting for a retry as soon as the caller aborts', async () => {
    const controller = new AbortController()
    const run = harness([failure(429, 'rate_limited', { 'Retry-After': '60' })], {
      // The client's own sleep on real timers: without the abort this would wait a minute.
      sleep: undefined,
      onAttempt: () => setImmediate(() => controller.abort()),
    })
    await expect(
      run.client.raw.GET('/pets', { params: { query: {} }, signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' })
    expect(run.sent).toHaveLength(1)
  })

  it('sends nothing for a request aborted before it started', async () => {
    const run = harness([])
    const aborted = AbortSignal.abort()
    await expect(
      run.client.raw.GET('/pets', { params: { query: {} }, signal: aborted }),
    ).rejects.toThrow()
    expect(run.sent).toHaveLength(0)
  })

  it.each([
    [
      400,
      'validation_failed',
      () => harness([failure(400, 'validation_failed')]).client.listPets({ limit: 0 }),
    ],
    [401, 'unauthorized', () => harness([failure(401, 'unauthorized')]).client.listPets()],
    [404, 'pet_not_found', () => harness([failure(404, 'pet_not_found')]).client.getPet(9)],
    [
      422,
      'idempotency_key_reused',
      () =>
        harness([failure(422, 'idempotency_key_reused')]).client.createPet(
          { name: 'x', categoryId: 2 },
          { idempotencyKey: 'reused' },
        ),
    ],
    [500, 'internal_error', () => harness([failure(500, 'internal_error')]).client.listPets()],
  ])('never retries a %i: it surfaces at once as a typed error', async (status, code, call) => {
    const error = await rejectionOf(call())
    expect(error).toMatchObject({
      name: 'PetstoreApiError',
      status,
      code,
      message: `${status} ${code}: a ${code}`,
      requestId: `req-${code}`,
      body: { code, status },
    })
    expect(error.response?.status).toBe(status)
  })

  it('gives an answer without an Error body (a proxy page) a typed error too', async () => {
    const run = harness([{ status: 502, headers: { 'Content-Type': 'text/html' } }])
    const error = await rejectionOf(run.client.listPets())
    expect(error).toMatchObject({ status: 502, code: 'internal_error', requestId: undefined })
    expect(run.sent).toHaveLength(1)
  })
})

describe('paging', () => {
  it('follows X-Next-Cursor and yields every pet of every page, 100 a page by default', async () => {
    const run = harness([
      ok([pet(1), pet(2)], { 'X-Next-Cursor': 'c1' }),
      ok([pet(3)], { 'X-Next-Cursor': 'c2' }),
      ok([pet(4)]),
    ])
    const ids: number[] = []
    for await (const each of run.client.pets({ status: 'sold' })) ids.push(each.id)
    expect(ids).toEqual([1, 2, 3, 4])
    expect(run.sent.map((request) => request.path)).toEqual([
      '/v1/pets?limit=100&status=sold',
      '/v1/pets?limit=100&status=sold&cursor=c1',
      '/v1/pets?limit=100&status=sold&cursor=c2',
    ])
  })

  it('returns one page and its cursor from listPets', async () => {
    const run = harness([ok([pet(1)], { 'X-Next-Cursor': 'abc' }), ok([pet(2)])])
    expect(await run.client.listPets({ limit: 1 })).toEqual({ pets: [pet(1)], nextCursor: 'abc' })
    expect(await run.client.listPets({ limit: 1, cursor: 'abc' })).toEqual({
      pets: [pet(2)],
      nextCursor: undefined,
    })
  })
})

describe('never stalls', () => {
  /** A request the server never answers: it ends only when its signal aborts. */
  const hangingFetch = (started: string[]) => (request: Request) =>
    new Promise<Response>((_, reject) => {
      started.push(request.url)
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
    })

  /** How a call ended so far: 'pending' until it settles (read after the fake clock moved). */
  const outcome = (call: Promise<unknown>) => {
    let state = 'pending'
    call.then(
      () => {
        state = 'resolved'
      },
      (error: unknown) => {
        state = (error as Error).name
      },
    )
    return () => state
  }

  afterEach(() => {
    vi.useRealTimers()
  })

  it("honours a call's AbortSignal while it waits for its turn behind another call", async () => {
    vi.useFakeTimers()
    const started: string[] = []
    // No budget is known yet: the first call's request goes alone, the second waits its turn.
    const run = harness([], { fetch: hangingFetch(started), timeoutMs: 600_000 })
    const first = outcome(run.client.listPets())
    const second = outcome(
      run.client.raw.GET('/pets', { params: { query: {} }, signal: AbortSignal.timeout(200) }),
    )
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const third = outcome(
      run.client.raw.GET('/pets', { params: { query: {} }, signal: controller.signal }),
    )
    await vi.advanceTimersByTimeAsync(200)
    expect(started).toHaveLength(1)
    expect(third()).toBe('AbortError')
    expect(first()).toBe('pending')
    // AbortSignal.timeout runs on the real clock; the abort reaches the waiting call all the same.
    await vi.waitFor(() => expect(second()).toBe('TimeoutError'), { timeout: 2_000 })
  })

  it('ends every call at the client deadline (timeoutMs): the hanging request and the calls behind it', async () => {
    vi.useFakeTimers()
    const started: string[] = []
    const run = harness([], { fetch: hangingFetch(started), timeoutMs: 10_000 })
    const first = outcome(run.client.listPets())
    await vi.advanceTimersByTimeAsync(5_000)
    const second = outcome(run.client.getPet(1))
    await vi.advanceTimersByTimeAsync(5_000)
    expect(first()).toBe('TimeoutError')
    expect(second()).toBe('pending')
    // The second call's turn came when the first ended; its own request hangs too.
    await vi.advanceTimersByTimeAsync(10_000)
    expect(second()).toBe('TimeoutError')
    expect(started).toHaveLength(2)
  })

  it('caps an absurd Retry-After (a proxy page) at a day by default, and at maxRetryAfterMs when set', async () => {
    const proxyPage = (): Answer => ({ status: 429, headers: { 'Retry-After': '999999999' } })
    const byDefault = harness([proxyPage()], { maxAttempts: 1 })
    const error = await rejectionOf(byDefault.client.listPets())
    expect(error.retryAfterMs).toBe(86_400_000)
    expect(byDefault.events[0]?.waitMs).toBe(86_400_000)

    const capped = harness([proxyPage(), ok([pet(1)])], { maxRetryAfterMs: 30_000 })
    expect((await capped.client.listPets()).pets).toEqual([pet(1)])
    expect(capped.waits).toEqual([30_000 + 250])
  })

  it('caps an absurd X-RateLimit-Reset the same way: the client is paused for maxRetryAfterMs, not years', async () => {
    const run = harness([ok([pet(1)], budget(0, START_SECONDS + 10 ** 9)), ok([pet(2)])], {
      maxRetryAfterMs: 45_000,
    })
    await run.client.listPets()
    expect(run.events[0]?.waitMs).toBe(45_000)
    expect((await run.client.listPets()).pets).toEqual([pet(2)])
    expect(run.sent[1]?.at).toBe(START + 45_000)
  })
})
