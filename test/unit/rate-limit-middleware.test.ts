import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { HttpError } from '#shared/errors/http-error.ts'
import { jsonResponse } from '#shared/http/http-response.ts'
import { httpPipeline } from '#shared/middleware/http-pipeline.ts'
import { RATE_LIMIT_HEADER_NAMES } from '#shared/rate-limit/rate-limit-headers.ts'
import {
  rateLimitMiddleware,
  STORE_FAILURE_METRIC,
} from '#shared/rate-limit/rate-limit-middleware.ts'
import { utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  type RateLimitDecision,
  type RateLimiter,
  suspendedDecision,
} from '#shared/rate-limit/rate-limiter.ts'
import {
  FIXTURE_KEY_ID,
  FIXTURE_REQUEST_ID,
  lambdaContext,
  restEvent,
} from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const NOW = Date.parse('2026-03-14T10:00:18Z')
const FREE = { perMinute: 60, perDay: 1_000 }

const decision = (
  outcome: Exclude<RateLimitDecision['outcome'], 'key_suspended'>,
  used: { minute: number; day: number },
): RateLimitDecision => {
  const windows = utcWindowsAt(NOW)
  return {
    outcome,
    nowMs: NOW,
    minute: { limit: 60, remaining: 60 - used.minute, resetAtMs: windows.minuteEndMs },
    day: { limit: 1_000, remaining: 1_000 - used.day, resetAtMs: windows.dayEndMs },
    ...(outcome === 'rate_limited' ? { retryAfterSeconds: 42 } : {}),
    ...(outcome === 'quota_exceeded' ? { retryAfterSeconds: 50_382 } : {}),
  }
}
const ADMITTED = decision('admitted', { minute: 1, day: 1 })
const RATE_LIMITED = decision('rate_limited', { minute: 60, day: 60 })

/** A limiter whose decision the test releases when it wants. */
const deferredLimiter = () => {
  let release: (decision: RateLimitDecision) => void = () => {}
  const consume = vi.fn(
    () =>
      new Promise<RateLimitDecision>((resolve) => {
        release = resolve
      }),
  )
  return {
    limiter: { consume } satisfies RateLimiter,
    release: (d: RateLimitDecision) => release(d),
  }
}
const fixedLimiter = (result: RateLimitDecision | Error) => ({
  consume: vi.fn(async () => {
    if (result instanceof Error) throw result
    return result
  }),
})

const pipelineWith = (
  limiter: RateLimiter,
  access: 'read' | 'write',
  handler: () => Promise<ReturnType<typeof jsonResponse>>,
) => {
  const logger = fakeLogger()
  const metrics = { addMetric: vi.fn() }
  const rateLimit = rateLimitMiddleware({ limiter, access, logger, metrics, clock: () => NOW })
  const invoke = httpPipeline<never>({ logger, rateLimit }).handler(handler)
  return {
    logger,
    metrics,
    // The fixture passed the authorizer with the free plan's limits (FREE).
    invoke: async (event = restEvent()) => {
      const response = await invoke(event, lambdaContext())
      return { ...response, json: JSON.parse(response.body) as Record<string, unknown> }
    },
  }
}

const flush = () => new Promise((resolve) => setImmediate(resolve))

const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
beforeEach(() => {
  unhandled.length = 0
  process.on('unhandledRejection', onUnhandled)
})
afterEach(async () => {
  await flush()
  process.off('unhandledRejection', onUnhandled)
  expect(unhandled).toEqual([])
})

describe('rate-limit middleware', () => {
  it('does not run a write handler until the limiter admitted the request', async () => {
    const { limiter, release } = deferredLimiter()
    const handler = vi.fn(async () => jsonResponse(201, { id: 1 }))
    const pipeline = pipelineWith(limiter, 'write', handler)
    const response = pipeline.invoke()
    await flush()
    expect(limiter.consume).toHaveBeenCalledWith(FIXTURE_KEY_ID, FREE)
    expect(handler).not.toHaveBeenCalled()
    release(ADMITTED)
    expect((await response).statusCode).toBe(201)
    expect(handler).toHaveBeenCalledOnce()
  })

  it('never runs a write handler for a rejected request: 429 with Retry-After and the headers', async () => {
    const handler = vi.fn(async () => jsonResponse(201, { id: 1 }))
    const response = await pipelineWith(fixedLimiter(RATE_LIMITED), 'write', handler).invoke()
    expect(handler).not.toHaveBeenCalled()
    expect(response.statusCode).toBe(429)
    expect(response.json).toMatchObject({ code: 'rate_limited', status: 429 })
    expect(response.headers).toMatchObject({
      'Retry-After': '42',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Limit': '60',
      RateLimit: '"minute";r=0;t=42, "day";r=940;t=50382',
    })
  })

  it('lets a read handler run while the limiter decides, and answers 429 instead of its result', async () => {
    const { limiter, release } = deferredLimiter()
    const handler = vi.fn(async () => jsonResponse(200, [{ id: 1, name: 'secret' }]))
    const response = pipelineWith(limiter, 'read', handler).invoke()
    await flush()
    expect(handler).toHaveBeenCalledOnce()
    release(decision('quota_exceeded', { minute: 3, day: 1_000 }))
    const answered = await response
    expect(answered.statusCode).toBe(429)
    expect(answered.body).not.toContain('secret')
    expect(answered.json).toMatchObject({ code: 'quota_exceeded', status: 429 })
    expect(answered.headers).toMatchObject({
      'Retry-After': '50382',
      'X-RateLimit-Limit': '1000',
      'X-RateLimit-Remaining': '0',
    })
    for (const name of RATE_LIMIT_HEADER_NAMES) expect(answered.headers).toHaveProperty(name)
  })

  it.each([
    ['200', async () => jsonResponse(200, []), 200],
    [
      '404',
      async () => {
        throw new HttpError('pet_not_found')
      },
      404,
    ],
    [
      '500',
      async () => {
        throw new Error('boom')
      },
      500,
    ],
  ] as const)('puts the headers on a %s of an admitted request', async (_name, handler, status) => {
    const response = await pipelineWith(fixedLimiter(ADMITTED), 'read', handler).invoke()
    expect(response.statusCode).toBe(status)
    expect(response.headers).toMatchObject({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '59',
      'X-RateLimit-Reset': String(Date.parse('2026-03-14T10:01:00Z') / 1000),
      'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
      RateLimit: '"minute";r=59;t=42, "day";r=999;t=50382',
    })
  })

  it('answers 429 with the headers when a read handler fails before a rejection is known', async () => {
    const { limiter, release } = deferredLimiter()
    const pipeline = pipelineWith(limiter, 'read', async () => {
      throw new HttpError('pet_not_found')
    })
    const response = pipeline.invoke()
    await flush()
    release(suspendedDecision(FREE, NOW, NOW + 900_000))
    const answered = await response
    expect(answered.statusCode).toBe(429)
    expect(answered.json).toMatchObject({ code: 'key_suspended', requestId: FIXTURE_REQUEST_ID })
    expect(answered.headers).toMatchObject({ 'Retry-After': '900', 'X-RateLimit-Remaining': '0' })
    expect(pipeline.metrics.addMetric).toHaveBeenCalledWith('KeySuspended', 'Count', 1)
  })

  it('admits, logs and counts when the limiter fails, still sending the headers', async () => {
    const pipeline = pipelineWith(fixedLimiter(new Error('store down')), 'write', async () =>
      jsonResponse(201, { id: 7 }),
    )
    const response = await pipeline.invoke()
    expect(response.statusCode).toBe(201)
    expect(response.headers).toMatchObject({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '60',
    })
    expect(pipeline.logger.warn).toHaveBeenCalledOnce()
    expect(JSON.stringify(pipeline.logger.warn.mock.calls)).not.toContain('Bearer')
    expect(pipeline.metrics.addMetric).toHaveBeenCalledWith(STORE_FAILURE_METRIC, 'Count', 1)
  })

  it('leaves requests without a key context alone (no key to count or describe)', async () => {
    const limiter = fixedLimiter(ADMITTED)
    const response = await pipelineWith(limiter, 'read', async () => jsonResponse(200, [])).invoke(
      restEvent({ authorized: false }),
    )
    expect(response.statusCode).toBe(200)
    expect(limiter.consume).not.toHaveBeenCalled()
    for (const name of RATE_LIMIT_HEADER_NAMES) expect(response.headers).not.toHaveProperty(name)
  })
})
