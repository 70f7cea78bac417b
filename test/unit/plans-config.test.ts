import { describe, expect, it } from 'vitest'
import {
  DEFAULT_ENTERPRISE_LIMITS,
  isPlanName,
  limitsFor,
  PLAN_LIMITS,
  PLAN_NAMES,
  parsePlanLimits,
} from '#shared/config/plans-config.ts'

describe('plans config', () => {
  it('has the four plans of docs/rate-limits-and-keys.md', () => {
    expect(PLAN_NAMES).toEqual(['free', 'pro', 'business', 'enterprise'])
  })

  // docs/rate-limits-and-keys.md, "Plans".
  it.each([
    ['free', 60, 1_000],
    ['pro', 300, 10_000],
    ['business', 1_000, 100_000],
  ] as const)('gives %s %i requests a minute and %i a day', (plan, perMinute, perDay) => {
    expect(PLAN_LIMITS[plan]).toEqual({ perMinute, perDay })
    expect(limitsFor(plan)).toEqual({ perMinute, perDay })
  })

  it('gives enterprise its configured limits, or the default when none are configured', () => {
    expect(limitsFor('enterprise')).toEqual(DEFAULT_ENTERPRISE_LIMITS)
    expect(limitsFor('enterprise', { perMinute: 9_000, perDay: 2_000_000 })).toEqual({
      perMinute: 9_000,
      perDay: 2_000_000,
    })
  })

  it('never applies enterprise configuration to the fixed plans', () => {
    expect(limitsFor('free', { perMinute: 9_000, perDay: 2_000_000 })).toEqual({
      perMinute: 60,
      perDay: 1_000,
    })
  })

  it('keeps every plan’s day limit at least its minute limit', () => {
    for (const plan of PLAN_NAMES) {
      const { perMinute, perDay } = limitsFor(plan)
      expect(perMinute).toBeGreaterThanOrEqual(1)
      expect(perDay).toBeGreaterThanOrEqual(perMinute)
    }
  })

  it.each([
    ['free', true],
    ['enterprise', true],
    ['Free', false],
    ['gold', false],
    ['', false],
  ])('isPlanName(%j) is %s', (name, expected) => {
    expect(isPlanName(name)).toBe(expected)
  })
})

describe('parsePlanLimits', () => {
  it.each([
    ['5000/1000000', 5_000, 1_000_000],
    [' 5000 / 1000000 ', 5_000, 1_000_000],
    ['1/1', 1, 1],
    ['60/1000', 60, 1_000],
  ])('reads %j', (text, perMinute, perDay) => {
    expect(parsePlanLimits(text)).toEqual({ perMinute, perDay })
  })

  it.each([
    ['garbage', 'garbage'],
    ['an empty text', ''],
    ['one number', '5000'],
    ['a missing day limit', '5000/'],
    ['a missing minute limit', '/1000000'],
    ['three numbers', '1/2/3'],
    ['zero per minute', '0/1000'],
    ['zero for both', '0/0'],
    ['a day limit below the minute limit', '1000/999'],
    ['a negative number', '-1/1000'],
    ['a fraction', '1.5/1000'],
    ['an exponent', '5e3/1e6'],
    ['another separator', '5000:1000000'],
  ])('refuses %s with a message naming the expected format', (_label, text) => {
    expect(() => parsePlanLimits(text)).toThrow(/perMinute\/perDay/)
  })

  it.each([
    ['100/5', 'perDay (5) is below perMinute (100)'],
    ['0/1000', 'perMinute is 0'],
  ])('refuses %j naming what is wrong and the rule', (text, problem) => {
    expect(() => parsePlanLimits(text)).toThrow(
      `Invalid plan limits "${text}": ${problem}; expected "perMinute/perDay" as whole numbers, perMinute at least 1 and perDay at least perMinute, e.g. "5000/1000000"`,
    )
  })
})
