import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import {
  QUOTA_EXCEEDED_RETRY_AFTER_SECONDS,
  THROTTLED_RETRY_AFTER_SECONDS,
} from '#shared/http/gateway-responses-config.ts'
import {
  type ApiResponse,
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * The local gateway's own 429s, before any function runs, through the real authorizer and
 * functions (forced with a backstop far below the plans). The token validation pattern's 401s
 * and the authorizer cache are in gateway-authorizer.test.ts.
 */
const FREE = PLAN_LIMITS.free
const FREE_KEY = 'gw-throttled-0123456789abcdef'
const PRO_KEY = 'gw-quota-0123456789abcdef012'

/** What tells a 429 of the gateway itself: the function never ran, so no rate-limit headers. */
const refusalOf = (response: ApiResponse) => ({
  status: response.status,
  rateLimitHeader: response.headers.get('x-ratelimit-limit'),
})
const GATEWAY_REFUSAL = { status: 429, rateLimitHeader: null }

describe("the gateway's own 429s", () => {
  let tiny: InProcessServer
  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    tiny = await startInProcessServer(
      { PETSTORE_API_KEYS: `free:${FREE_KEY},pro:${PRO_KEY}` },
      {
        // A backstop far below the plan, to force the gateway to answer before the function.
        backstopFor: (limits) =>
          limits.perMinute === FREE.perMinute
            ? { rateLimit: 0.001, burstLimit: 1, dailyQuota: 100 }
            : { rateLimit: 100, burstLimit: 100, dailyQuota: 1 },
      },
    )
  })
  afterAll(async () => {
    await tiny?.stop()
    vi.useRealTimers()
  })

  it('answers THROTTLED and QUOTA_EXCEEDED with the Error body and Retry-After', async () => {
    vi.setSystemTime(Date.UTC(2026, 10, 22, 14, 0, 0))
    const throttled = apiClient(tiny.baseUrl, FREE_KEY)
    expect((await throttled.get('/pets')).status).toBe(200)
    const refused = await throttled.get('/pets')
    expect(refusalOf(refused)).toEqual(GATEWAY_REFUSAL)
    expect(refused.json).toMatchObject({
      code: 'rate_limited',
      message: expect.any(String),
      status: 429,
    })
    expect(refused.headers.get('retry-after')).toBe(String(THROTTLED_RETRY_AFTER_SECONDS))

    const quota = apiClient(tiny.baseUrl, PRO_KEY)
    expect((await quota.get('/pets')).status).toBe(200)
    const spent = await quota.get('/pets')
    expect(refusalOf(spent)).toEqual(GATEWAY_REFUSAL)
    expect(spent.json).toMatchObject({
      code: 'quota_exceeded',
      message: expect.any(String),
      status: 429,
    })
    expect(spent.headers.get('retry-after')).toBe(String(QUOTA_EXCEEDED_RETRY_AFTER_SECONDS))
  })
})
