import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { rawPipeline } from '#test/support/raw-http.ts'

/**
 * A burst on the local server: requests pipelined on one connection all reach the functions at
 * once, and their DynamoDB calls queue behind the one process that also runs the embedded store.
 * Only `Date` is faked (5 s into a UTC minute), so the whole burst counts in one minute window.
 */
const START = Date.UTC(2026, 10, 22, 12, 0, 5)
const PRO_KEY = 'burst-pro-0123456789abcdef01234'
const PRO = PLAN_LIMITS.pro
/**
 * All at once on one connection: the gateway runs them on the function's local instances (10 at a
 * time, local/gateway/function-instances.ts), each invocation's deadline (the local function
 * timeout, 10 s, a 503 at 9.5 s) starting when it runs. Run all at once in this process, they
 * shared its CPU and their deadlines ran while they waited: at a load average of 20, 100 of 100
 * answered 503. 100 keep the point (each one counted once) in a few seconds. The 100 share one
 * authorizer call (local/gateway/authorizer-cache.ts).
 */
const BURST = 100

let server: InProcessServer

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
  server = await startInProcessServer({ PETSTORE_API_KEYS: `pro:${PRO_KEY}` })
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

describe('a burst of pipelined requests on the local server', () => {
  it('answers each of 100 pipelined GET /pets with 200 and counts every one of them', async () => {
    const base = new URL(server.baseUrl)
    const request = `GET /v1/pets HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${PRO_KEY}\r\n\r\n`
    const answers = await rawPipeline(
      base,
      Array.from({ length: BURST }, () => request),
    )

    const statuses: Record<number, number> = {}
    for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1
    expect(statuses).toEqual({ 200: BURST })
    // Counted one by one: the remaining counts are 299 down to 200, each once. A request the
    // limiter admitted without counting (its store failing) would claim the whole 300.
    const remaining = answers.map((answer) => Number(answer.headers['x-ratelimit-remaining']))
    expect(remaining.toSorted((a, b) => b - a)).toEqual(
      Array.from({ length: BURST }, (_, i) => PRO.perMinute - 1 - i),
    )
    const next = await apiClient(server.baseUrl, PRO_KEY).get('/pets')
    expect(next.status).toBe(200)
    expect(next.headers.get('x-ratelimit-remaining')).toBe(String(PRO.perMinute - BURST - 1))
  })
})
