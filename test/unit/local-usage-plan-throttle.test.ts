import { describe, expect, it } from 'vitest'
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

  it('never holds more than a full bucket, however long the key was idle', () => {
    const time = clockAt(T0)
    const plans = new UsagePlanThrottle({ clock: time.clock })
    plans.admit('k', FREE)
    time.advance(24 * 60 * 60 * 1000)
    const verdicts = Array.from({ length: 121 }, () => plans.admit('k', FREE))
    expect(verdicts.filter((verdict) => verdict === 'admitted')).toHaveLength(120)
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

  it('does not count a throttled request against the quota', () => {
    const time = clockAt(T0)
    const plans = new UsagePlanThrottle({
      clock: time.clock,
      backstopFor: () => ({ rateLimit: 1, burstLimit: 1, dailyQuota: 2 }),
    })
    expect([1, 2, 3].map(() => plans.admit('k', FREE))).toEqual([
      'admitted',
      'THROTTLED',
      'THROTTLED',
    ])
    time.advance(1_000)
    expect(plans.admit('k', FREE)).toBe('admitted')
    time.advance(1_000)
    expect(plans.admit('k', FREE)).toBe('QUOTA_EXCEEDED')
  })
})
