import { describe, expect, it, vi } from 'vitest'
import { jsonResponse } from '#shared/http/http-response.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import {
  CONFIG_FAILURE_METRIC,
  rateLimitMiddleware,
  STORE_FAILURE_METRIC,
} from '#shared/rate-limit/rate-limit-middleware.ts'
import { utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  admittedOnStoreFailure,
  type RateLimitDecision,
  type RateLimiter,
} from '#shared/rate-limit/rate-limiter.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/**
 * The failure policy (docs/rate-limits-and-keys.md): transient store failures admit, configuration
 * failures answer 503, headers never claim more than the key had left when last known, and a
 * key this instance knows to be refused costs no pet-table read.
 */
const NOW = Date.parse('2026-03-14T10:00:18Z')
const FREE = { perMinute: 60, perDay: 1_000 }
const windows = utcWindowsAt(NOW)

const counted = (
  outcome: 'admitted' | 'rate_limited',
  used: { minute: number; day: number },
  nowMs = NOW,
): RateLimitDecision => ({
  outcome,
  nowMs,
  minute: { limit: 60, remaining: 60 - used.minute, resetAtMs: windows.minuteEndMs },
  day: { limit: 1_000, remaining: 1_000 - used.day, resetAtMs: windows.dayEndMs },
  ...(outcome === 'rate_limited' ? { retryAfterSeconds: 42 } : {}),
})

const named = (name: string) => Object.assign(new Error(name), { name })

/** A limiter answering from a script; a string is a store error of that name. */
const scriptedLimiter = (script: (RateLimitDecision | string)[]) => {
  const consume = vi.fn(async () => {
    const next = script.shift()
    if (next === undefined) throw new Error('script exhausted')
    // The real limiter never rejects: a store failure is a decision with storeError.
    return typeof next === 'string' ? admittedOnStoreFailure(FREE, NOW, named(next)) : next
  })
  return { consume } satisfies RateLimiter
}

const pipeline = (limiter: RateLimiter, access: 'read' | 'write', now = () => NOW) => {
  const logger = fakeLogger()
  const metrics = { addMetric: vi.fn() }
  /** Stands for the pet table: every handler run is one read or write of it. */
  const petTableCalls = vi.fn(async () => jsonResponse(200, []))
  const rateLimit = rateLimitMiddleware({ limiter, access, logger, metrics, clock: now })
  const invoke = httpPipeline<never>({ logger, rateLimit }).handler(petTableCalls)
  return {
    logger,
    metrics,
    petTableCalls,
    call: async () => {
      const response = await invoke(restEvent(), lambdaContext())
      return { ...response, json: JSON.parse(response.body) as Record<string, unknown> }
    },
  }
}

const metricCount = (metrics: { addMetric: ReturnType<typeof vi.fn> }, name: string) =>
  metrics.addMetric.mock.calls.filter(([metric]) => metric === name).length

describe('rate limiter failure policy', () => {
  it.each(['ResourceNotFoundException', 'AccessDeniedException', 'ValidationException'])(
    'answers 503 service_unavailable with Retry-After on a configuration failure (%s), for reads and writes',
    async (name) => {
      for (const access of ['read', 'write'] as const) {
        const { call, metrics, logger, petTableCalls } = pipeline(scriptedLimiter([name]), access)
        const response = await call()
        expect(response.statusCode).toBe(503)
        expect(response.json).toMatchObject({ code: 'service_unavailable', status: 503 })
        expect(response.headers?.['Retry-After']).toBe('1')
        expect(metricCount(metrics, CONFIG_FAILURE_METRIC)).toBe(1)
        expect(metricCount(metrics, STORE_FAILURE_METRIC)).toBe(0)
        expect(logger.error).toHaveBeenCalled()
        // A write never reaches the table without a limit decision.
        if (access === 'write') expect(petTableCalls).not.toHaveBeenCalled()
      }
    },
  )

  it.each(['ProvisionedThroughputExceededException', 'TimeoutError', 'InternalServerError'])(
    'admits on a transient failure (%s), counted for the alarm',
    async (name) => {
      const { call, metrics, petTableCalls } = pipeline(scriptedLimiter([name]), 'write')
      const response = await call()
      expect(response.statusCode).toBe(200)
      expect(petTableCalls).toHaveBeenCalledTimes(1)
      expect(metricCount(metrics, STORE_FAILURE_METRIC)).toBe(1)
      expect(metricCount(metrics, CONFIG_FAILURE_METRIC)).toBe(0)
    },
  )

  it('never shows more remaining than the last decision this instance saw in the same windows', async () => {
    const limiter = scriptedLimiter([counted('admitted', { minute: 50, day: 700 }), 'TimeoutError'])
    const { call } = pipeline(limiter, 'read')
    await call()
    const degraded = await call()
    expect(degraded.statusCode).toBe(200)
    expect(degraded.headers?.['X-RateLimit-Remaining']).toBe('10')
    expect(degraded.headers?.RateLimit).toContain('"minute";r=10;')
    expect(degraded.headers?.RateLimit).toContain('"day";r=300;')
  })

  it('shows the plan limits on a failure when it knows nothing of the key', async () => {
    const { call } = pipeline(scriptedLimiter(['TimeoutError']), 'read')
    const response = await call()
    expect(response.headers?.['X-RateLimit-Remaining']).toBe('60')
  })
})

describe('a key this instance knows to be refused', () => {
  it('costs no pet-table read for the rest of the window, while its refusals are still counted', async () => {
    const refused = counted('rate_limited', { minute: 60, day: 60 })
    const limiter = scriptedLimiter([refused, refused, refused])
    const { call, petTableCalls } = pipeline(limiter, 'read')

    // The first refusal is learned while the read runs alongside the decision (one read).
    expect((await call()).statusCode).toBe(429)
    expect(petTableCalls).toHaveBeenCalledTimes(1)
    // From then on the decision comes first and the handler never runs.
    for (let i = 0; i < 2; i += 1) {
      const response = await call()
      expect(response.statusCode).toBe(429)
      expect(response.json).toMatchObject({ code: 'rate_limited' })
      expect(response.headers?.['Retry-After']).toBe('42')
    }
    expect(petTableCalls).toHaveBeenCalledTimes(1)
    expect(limiter.consume).toHaveBeenCalledTimes(3)
  })

  it('reads again, alongside the decision, once the refusal has run out', async () => {
    let now = NOW
    const limiter = scriptedLimiter([
      counted('rate_limited', { minute: 60, day: 60 }),
      counted('admitted', { minute: 1, day: 61 }, NOW + 43_000),
    ])
    const { call, petTableCalls } = pipeline(limiter, 'read', () => now)
    await call()
    now = NOW + 43_000
    expect((await call()).statusCode).toBe(200)
    expect(petTableCalls).toHaveBeenCalledTimes(2)
  })
})
