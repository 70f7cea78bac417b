import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * Plan limits over HTTP on the local server (in this process): the Free key's minute window is
 * driven to its limit, then into a suspension; a Pro key in the same minute is unaffected. Only
 * `Date` is faked, so the gateway, the functions' limiter and this test share one clock that starts
 * 5 s into a UTC minute (the burst never straddles a window), while sockets and timers stay real.
 */
const START = Date.UTC(2026, 10, 22, 12, 0, 5)
const FREE_KEY = 'rl-free-0123456789abcdef01234'
const PRO_KEY = 'rl-pro-0123456789abcdef012345'
const FREE = PLAN_LIMITS.free

let server: InProcessServer
let free: ReturnType<typeof apiClient>
let pro: ReturnType<typeof apiClient>

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
  server = await startInProcessServer({ PETSTORE_API_KEYS: `free:${FREE_KEY},pro:${PRO_KEY}` })
  free = apiClient(server.baseUrl, FREE_KEY)
  pro = apiClient(server.baseUrl, PRO_KEY)
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

const rateLimitHeaders = (headers: Headers) => ({
  limit: headers.get('x-ratelimit-limit'),
  remaining: headers.get('x-ratelimit-remaining'),
  reset: headers.get('x-ratelimit-reset'),
  policy: headers.get('ratelimit-policy'),
  current: headers.get('ratelimit'),
})

describe('rate limits on the local server', () => {
  it('puts the headers on 2xx, 4xx and 404 responses of a keyed request, but not on 401', async () => {
    const responses = [
      await pro.post('/pets', { name: 'Headed', categoryId: 1 }),
      await pro.get('/pets?limit=1'),
      await pro.get('/pets?limit=0'),
      await pro.post('/pets', '{not json'),
      await pro.get('/pets/987654321'),
    ]
    expect(responses.map((response) => response.status)).toEqual([201, 200, 400, 400, 404])
    for (const response of responses) {
      const headers = rateLimitHeaders(response.headers)
      expect(headers.limit).toMatch(/^\d+$/)
      expect(Number(headers.remaining)).toBeLessThan(Number(headers.limit))
      expect(Number(headers.reset)).toBeGreaterThan(Date.now() / 1000 - 1)
      expect(headers.policy).toMatch(/"minute";q=300;w=60/)
      expect(headers.policy).toMatch(/"day";q=10000;w=86400/)
      expect(headers.current).toMatch(/"minute";r=\d+;t=\d+/)
    }
    const remaining = responses.map((response) =>
      Number(response.headers.get('x-ratelimit-remaining')),
    )
    expect(remaining).toEqual([...remaining].sort((a, b) => b - a))
    expect(new Set(remaining).size).toBe(remaining.length)
    expect(rateLimitHeaders((await pro.get('/pets', { key: null })).headers).limit).toBeNull()
  })

  it("puts none on the gateway's own 404 route_not_found, even with a valid key (the docs say so)", async () => {
    // API Gateway routes before it authorizes: no function, no limiter, no window to describe.
    const unrouted = await pro.get('/store/orders')
    expect(unrouted.status).toBe(404)
    expect((unrouted.json as { code: string }).code).toBe('route_not_found')
    expect(rateLimitHeaders(unrouted.headers)).toEqual({
      limit: null,
      remaining: null,
      reset: null,
      policy: null,
      current: null,
    })
  })

  it('gives a Free key exactly 60 requests a minute, then 429 rate_limited, then a suspension; Pro is unaffected', async () => {
    // A fresh UTC minute for the Free key: every request below shares it. They come 400 ms
    // apart (2.5 a second, all 122 inside the minute): a frozen clock would send them in one
    // instant, which the gateway's usage-plan token bucket (2 x 60 deep) rightly refuses itself.
    vi.setSystemTime(START + 60_000)
    const step = () => vi.setSystemTime(Date.now() + 400)
    const probe = await free.get('/pets?limit=1')

    const statuses: number[] = []
    let last = probe
    while (true) {
      step()
      last = await free.get('/pets?limit=1')
      statuses.push(last.status)
      if (last.status !== 200 || statuses.length > FREE.perMinute + 5) break
    }
    // The probe counted in this window too.
    expect(statuses.filter((status) => status === 200).length).toBe(FREE.perMinute - 1)
    expect(last.status).toBe(429)
    expect(last.json).toMatchObject({ code: 'rate_limited', status: 429 })
    expect(last.headers.get('x-ratelimit-remaining')).toBe('0')
    const retryAfter = Number(last.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)

    // A Pro key in the same minute is served.
    expect((await pro.get('/pets?limit=1')).status).toBe(200)

    // Rejections beyond the per-minute limit suspend the key for 15 minutes.
    let rejected = 1
    let current = last
    while (current.status === 429 && (current.json as { code: string }).code === 'rate_limited') {
      step()
      current = await free.get('/pets?limit=1')
      rejected += 1
      if (rejected > FREE.perMinute + 5) break
    }
    expect(rejected).toBe(FREE.perMinute + 1)
    expect(current.status).toBe(429)
    expect(current.json).toMatchObject({ code: 'key_suspended', status: 429 })
    const suspendedFor = Number(current.headers.get('retry-after'))
    expect(suspendedFor).toBeGreaterThan(14 * 60)
    expect(suspendedFor).toBeLessThanOrEqual(15 * 60)

    // While suspended, writes are refused too and create nothing.
    const create = await free.post('/pets', { name: 'Never stored', categoryId: 1 })
    expect(create.status).toBe(429)
    expect(create.json).toMatchObject({ code: 'key_suspended' })
    const listed = await pro.get<{ name: string }[]>('/pets?limit=100')
    expect(listed.json.map((pet) => pet.name)).not.toContain('Never stored')
    expect((await pro.get('/pets?limit=1')).status).toBe(200)
  })
})
