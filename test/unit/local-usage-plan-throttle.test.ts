import { describe, expect, it } from 'vitest'
import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import { UsagePlanThrottle } from '#local/gateway/usage-plan-throttle.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { SUSPENSION_MS } from '#shared/rate-limit/rate-limit-windows.ts'

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

  // The end-to-end suite hammers a Free key through the gateway for part of a suspension
  // (test/e2e/gateway-backstop.test.ts, all of it at CI's scale); this is the whole of one, per plan.
  it.each(Object.entries(PLAN_LIMITS))(
    'admits a key of plan %s sending as fast as its bucket refills through a whole suspension',
    (_, limits) => {
      const time = clockAt(T0)
      const plans = new UsagePlanThrottle({ clock: time.clock })
      const { rateLimit, burstLimit } = usagePlanBackstop(limits)
      const verdicts = new Map<string, number>()
      const send = (count: number) => {
        for (let i = 0; i < count; i += 1) {
          const verdict = plans.admit('k', limits)
          verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1)
        }
      }
      // The whole bucket, then each second what refilled it, from the suspension's start to its end.
      send(burstLimit)
      let sent = burstLimit
      for (let second = 1; second <= SUSPENSION_MS / 1_000; second += 1) {
        time.advance(1_000)
        const due = burstLimit + Math.floor(rateLimit * second) - sent
        send(due)
        sent += due
      }
      expect(Object.fromEntries(verdicts)).toEqual({ admitted: sent })
    },
  )
})
