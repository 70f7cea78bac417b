import { describe, expect, it } from 'vitest'
import { AuthorizerCache } from '#local/authorizer-cache.ts'
import { UsagePlanThrottle } from '#local/usage-plan-throttle.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'

const FREE = PLAN_LIMITS.free
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0)

const clockAt = (start: number) => {
  let now = start
  return { clock: () => now, advance: (ms: number) => (now += ms), set: (ms: number) => (now = ms) }
}

describe('local usage-plan backstop (token bucket and DAY quota per key)', () => {
  it('lets a full bucket of 2 x per-minute through at once, then refills per-minute / 30 per second', () => {
    const time = clockAt(T0)
    const plans = new UsagePlanThrottle({ clock: time.clock })
    const verdicts = Array.from({ length: 121 }, () => plans.admit('k', FREE))
    expect(verdicts.filter((verdict) => verdict === 'admitted')).toHaveLength(120)
    expect(verdicts.at(-1)).toBe('THROTTLED')
    time.advance(1_000) // 2 tokens a second for Free
    expect([plans.admit('k', FREE), plans.admit('k', FREE), plans.admit('k', FREE)]).toEqual([
      'admitted',
      'admitted',
      'THROTTLED',
    ])
  })

  it('keeps one bucket per key', () => {
    const plans = new UsagePlanThrottle({ clock: () => T0 })
    for (let i = 0; i < 120; i += 1) plans.admit('a', FREE)
    expect(plans.admit('a', FREE)).toBe('THROTTLED')
    expect(plans.admit('b', FREE)).toBe('admitted')
  })

  it('counts every admitted request against the DAY quota, which resets at UTC midnight', () => {
    const time = clockAt(T0)
    const plans = new UsagePlanThrottle({
      clock: time.clock,
      backstopFor: () => ({ rateLimit: 1_000, burstLimit: 1_000, dailyQuota: 3 }),
    })
    expect([1, 2, 3, 4].map(() => plans.admit('k', FREE))).toEqual([
      'admitted',
      'admitted',
      'admitted',
      'QUOTA_EXCEEDED',
    ])
    time.set(Date.UTC(2026, 10, 23, 0, 0, 0))
    expect(plans.admit('k', FREE)).toBe('admitted')
  })
})

describe('local authorizer result cache', () => {
  it('reuses an answer for the TTL, then asks again', () => {
    const time = clockAt(T0)
    const cache = new AuthorizerCache({ ttlSeconds: 60, clock: time.clock })
    cache.put('Bearer key-0123456789abcdefghij', 'denied')
    time.advance(59_999)
    expect(cache.get('Bearer key-0123456789abcdefghij')).toBe('denied')
    time.advance(1)
    expect(cache.get('Bearer key-0123456789abcdefghij')).toBeUndefined()
  })

  it('caches nothing with TTL 0', () => {
    const cache = new AuthorizerCache({ ttlSeconds: 0, clock: () => T0 })
    cache.put('Bearer key-0123456789abcdefghij', 'denied')
    expect(cache.get('Bearer key-0123456789abcdefghij')).toBeUndefined()
  })
})
