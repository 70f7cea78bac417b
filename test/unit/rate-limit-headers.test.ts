import { describe, expect, it } from 'vitest'
import { rateLimitHeaders } from '#shared/rate-limit/rate-limit-headers.ts'
import { utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import { admittedOnStoreFailure, suspendedDecision } from '#shared/rate-limit/rate-limiter.ts'

const at = (iso: string) => Date.parse(iso)
const FREE = { perMinute: 60, perDay: 1_000 }

/** Header input as the limiter makes it: counts used in the current minute and day. */
const usage = (iso: string, minuteUsed: number, dayUsed: number, limits = FREE) => {
  const nowMs = at(iso)
  const windows = utcWindowsAt(nowMs)
  return {
    nowMs,
    minute: {
      limit: limits.perMinute,
      remaining: limits.perMinute - minuteUsed,
      resetAtMs: windows.minuteEndMs,
    },
    day: { limit: limits.perDay, remaining: limits.perDay - dayUsed, resetAtMs: windows.dayEndMs },
  }
}

describe('rate-limit headers', () => {
  it('describes the minute window when it has fewer requests left, and both windows in the draft fields', () => {
    expect(rateLimitHeaders(usage('2026-03-14T05:17:18Z', 1, 1))).toStrictEqual({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '59',
      'X-RateLimit-Reset': String(at('2026-03-14T05:18:00Z') / 1000),
      'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
      RateLimit: `"minute";r=59;t=42, "day";r=999;t=${24 * 3600 - (5 * 3600 + 17 * 60 + 18)}`,
    })
  })

  it('describes the day window once it has fewer requests left than the minute', () => {
    const headers = rateLimitHeaders(usage('2026-03-14T22:00:30Z', 2, 990))
    expect(headers['X-RateLimit-Limit']).toBe('1000')
    expect(headers['X-RateLimit-Remaining']).toBe('10')
    expect(headers['X-RateLimit-Reset']).toBe(String(at('2026-03-15T00:00:00Z') / 1000))
    expect(headers.RateLimit).toBe('"minute";r=58;t=30, "day";r=10;t=7170')
  })

  it('breaks a tie in remaining requests by the window that resets first (the minute)', () => {
    const headers = rateLimitHeaders(usage('2026-03-14T10:00:10Z', 55, 995))
    expect(headers['X-RateLimit-Remaining']).toBe('5')
    expect(headers['X-RateLimit-Limit']).toBe('60')
    expect(headers['X-RateLimit-Reset']).toBe(String(at('2026-03-14T10:01:00Z') / 1000))
  })

  it.each([
    ['minute', '2026-03-14T05:17:59.999Z', '2026-03-14T05:18:00Z', '2026-03-15T00:00:00Z'],
    ['day', '2026-03-14T23:59:59.999Z', '2026-03-15T00:00:00Z', '2026-03-15T00:00:00Z'],
    ['month', '2026-04-30T23:59:59.999Z', '2026-05-01T00:00:00Z', '2026-05-01T00:00:00Z'],
    ['year', '2026-12-31T23:59:59.999Z', '2027-01-01T00:00:00Z', '2027-01-01T00:00:00Z'],
    ['leap day', '2028-02-29T23:59:59.999Z', '2028-03-01T00:00:00Z', '2028-03-01T00:00:00Z'],
  ])(
    'at the last millisecond before a %s boundary, resets at the boundary with t=1',
    (_name, now, minuteEnd, dayEnd) => {
      const minuteHeaders = rateLimitHeaders(usage(now, 1, 1))
      expect(minuteHeaders['X-RateLimit-Reset']).toBe(String(at(minuteEnd) / 1000))
      expect(minuteHeaders.RateLimit).toMatch(/^"minute";r=59;t=1, "day";r=999;t=\d+$/)
      const dayHeaders = rateLimitHeaders(usage(now, 1, 999))
      expect(dayHeaders['X-RateLimit-Reset']).toBe(String(at(dayEnd) / 1000))
      expect(dayHeaders['X-RateLimit-Remaining']).toBe('1')
    },
  )

  it('starts fresh at 00:00:00.000: full windows, a whole minute and a whole day to go', () => {
    const headers = rateLimitHeaders(usage('2027-01-01T00:00:00.000Z', 0, 0))
    expect(headers.RateLimit).toBe('"minute";r=60;t=60, "day";r=1000;t=86400')
    expect(headers['X-RateLimit-Reset']).toBe(String(at('2027-01-01T00:01:00Z') / 1000))
  })

  it('reports a suspension as nothing left in either window until it ends', () => {
    const nowMs = at('2026-03-14T23:50:00.500Z')
    const until = nowMs + 15 * 60_000
    const headers = rateLimitHeaders(suspendedDecision(FREE, nowMs, until))
    expect(headers['X-RateLimit-Remaining']).toBe('0')
    expect(headers['X-RateLimit-Limit']).toBe('60')
    expect(headers['X-RateLimit-Reset']).toBe(String(Math.ceil(until / 1000)))
    expect(headers.RateLimit).toBe('"minute";r=0;t=900, "day";r=0;t=900')
  })

  it('reports the plan limits with nothing used when the store failed (failure policy)', () => {
    const decision = admittedOnStoreFailure(FREE, at('2026-03-14T05:17:18Z'), new Error('down'))
    expect(rateLimitHeaders(decision)).toMatchObject({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '60',
      'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
      RateLimit: '"minute";r=60;t=42, "day";r=1000;t=67362',
    })
  })
})
