import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { SUSPENSION_MS } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * The two layers of limits, as on AWS: the functions' exact limiter answers first; the local
 * gateway's usage-plan backstop (the deployed token bucket and DAY quota, counting every request
 * it lets through) stays out of the way of honest and hammering clients alike. Only `Date` is
 * faked: the gateway, the functions' limiter and the clients share one clock; I/O stays real.
 * The gateway's own 429s (a backstop forced below the plans) are in gateway-responses.test.ts.
 */
const FREE = PLAN_LIMITS.free
const KEYS = {
  follower: 'gw-follower-0123456789abcdef',
  edge: 'gw-edge-0123456789abcdef0123',
  hammer: 'gw-hammer-0123456789abcdef01',
}
/**
 * How long the hammering client keeps the bucket empty: 2 minutes in `npm test` (the suspension
 * starts, its answers come from the function), the whole 15-minute suspension at CI's scale (about
 * 1,900 requests, nearly twice the Free daily limit, through the gateway and under its quota).
 */
const HAMMER_MINUTES = Math.min(scaled(2, 'PETSTORE_HAMMER_MINUTES'), SUSPENSION_MS / 60_000)
const at = (hh: number, mm: number, ss: number) => Date.UTC(2026, 10, 22, hh, mm, ss)

let server: InProcessServer
beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(at(12, 0, 0))
  server = await startInProcessServer({
    PETSTORE_API_KEYS: Object.values(KEYS)
      .map((key) => `free:${key}`)
      .join(','),
  })
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

describe('the usage-plan backstop on the local gateway', () => {
  it('never refuses a client that follows the headers', async () => {
    vi.setSystemTime(at(12, 0, 0))
    const api = apiClient(server.baseUrl, KEYS.follower)
    const statuses: number[] = []
    for (let i = 0; i < 4 * FREE.perMinute; i += 1) {
      const response = await api.get('/pets?limit=1')
      statuses.push(response.status)
      if (response.headers.get('x-ratelimit-remaining') === '0') {
        // Wait, as told, until the window resets.
        vi.setSystemTime(Number(response.headers.get('x-ratelimit-reset')) * 1000)
      }
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([])
  })

  it('admits 60 requests at 12:00:59 and 60 more at 12:01:00 from a Free key', async () => {
    const api = apiClient(server.baseUrl, KEYS.edge)
    const burst = async () =>
      Promise.all(Array.from({ length: FREE.perMinute }, () => api.get('/pets?limit=1')))
    vi.setSystemTime(at(12, 20, 59))
    const first = await burst()
    vi.setSystemTime(at(12, 21, 0))
    const second = await burst()
    expect([...first, ...second].map((response) => response.status)).toEqual(
      Array(2 * FREE.perMinute).fill(200),
    )
  })

  it('suspends a hammering client in the function, which never meets a gateway 429', async () => {
    const api = apiClient(server.baseUrl, KEYS.hammer)
    const { burstLimit, rateLimit, dailyQuota } = usagePlanBackstop(FREE)
    const codes = new Map<string, number>()
    let sent = 0
    const send = async (count: number) => {
      // At one instant of the faked clock, 20 at a time: all at once, a loaded machine gave
      // some of 120 concurrent invocations more than their 10 s (503s, not the bucket's answer).
      const responses = []
      for (let at = 0; at < count; at += 20) {
        const batch = Math.min(20, count - at)
        responses.push(
          ...(await Promise.all(Array.from({ length: batch }, () => api.get('/pets?limit=1')))),
        )
      }
      sent += count
      for (const response of responses) {
        // Every answer comes from the function: its code and its rate-limit headers (the
        // gateway's own 429s carry none).
        expect(response.headers.get('x-ratelimit-limit')).toBe(String(FREE.perMinute))
        const code = response.status === 200 ? 'ok' : (response.json as { code: string }).code
        codes.set(code, (codes.get(code) ?? 0) + 1)
      }
    }
    const start = at(13, 0, 5)
    vi.setSystemTime(start)
    // A whole bucket at once: the minute's 60, then 60 refusals.
    await send(burstLimit)
    // Then as fast as the bucket refills (twice the per-minute limit), for HAMMER_MINUTES of the
    // suspension (the bucket's arithmetic over a whole one, per plan: local-usage-plan-throttle
    // unit tests).
    const step = 10
    for (let elapsed = step; elapsed <= HAMMER_MINUTES * 60; elapsed += step) {
      vi.setSystemTime(start + elapsed * 1000)
      await send(rateLimit * step)
    }
    expect(codes.get('ok')).toBe(FREE.perMinute)
    expect(codes.get('rate_limited')).toBe(FREE.perMinute)
    // The 61st refusal in the minute starts the suspension and is answered key_suspended.
    expect(codes.get('key_suspended')).toBe(sent - 2 * FREE.perMinute)
    expect(sent).toBeLessThan(dailyQuota)
    // After the suspension the key is served again.
    vi.setSystemTime(start + SUSPENSION_MS + 60 * 1000)
    expect((await api.get('/pets?limit=1')).status).toBe(200)
    // About 360 requests (1,900 at CI's scale), 1 s on an idle machine and 30 s at a load average
    // of 14: the hang guard is wider than the suite's 30 s.
  }, 180_000)
})
