import { describe, expect, it } from 'vitest'
import { PLAN_LIMITS, PLAN_TAGS, planFromTags } from '#shared/config/plans-config.ts'

const enterprise = (perMinute?: string, perDay?: string) => ({
  [PLAN_TAGS.plan]: 'enterprise',
  ...(perMinute === undefined ? {} : { [PLAN_TAGS.perMinute]: perMinute }),
  ...(perDay === undefined ? {} : { [PLAN_TAGS.perDay]: perDay }),
})

describe('planFromTags', () => {
  it('reads the tag names docs/rate-limits-and-keys.md tells operators to set', () => {
    const tags = {
      'petstore:plan': 'enterprise',
      'petstore:perMinute': '10',
      'petstore:perDay': '100',
    }
    expect(planFromTags(tags)).toEqual({
      plan: 'enterprise',
      limits: { perMinute: 10, perDay: 100 },
    })
  })

  it.each(['free', 'pro', 'business'] as const)('gives %s its PLAN_LIMITS', (plan) => {
    expect(planFromTags({ [PLAN_TAGS.plan]: plan })).toEqual({ plan, limits: PLAN_LIMITS[plan] })
  })

  it.each([
    ['Pro', 'pro'],
    ['  BUSINESS ', 'business'],
    ['\tfree\n', 'free'],
    [' Enterprise ', 'enterprise'],
  ])('reads %j case-insensitively and trimmed as %s', (value, plan) => {
    const tags = { ...enterprise('10', '100'), [PLAN_TAGS.plan]: value }
    expect(planFromTags(tags)).toMatchObject({ plan })
  })

  it('ignores limit tags on a standard plan (its limits come from the plan table)', () => {
    expect(
      planFromTags({
        [PLAN_TAGS.plan]: 'pro',
        [PLAN_TAGS.perMinute]: '99999',
        [PLAN_TAGS.perDay]: 'x',
      }),
    ).toEqual({ plan: 'pro', limits: PLAN_LIMITS.pro })
  })

  it('gives an enterprise plan the limits of its tags', () => {
    expect(planFromTags(enterprise('7000', '2000000'))).toEqual({
      plan: 'enterprise',
      limits: { perMinute: 7_000, perDay: 2_000_000 },
    })
    expect(planFromTags(enterprise(' 50 ', '50'))).toEqual({
      plan: 'enterprise',
      limits: { perMinute: 50, perDay: 50 },
    })
  })

  it.each([
    ['no tags at all', undefined, /missing tag petstore:plan/],
    ['tags without the plan tag', { other: 'x' }, /missing tag petstore:plan/],
    ['an unknown plan', { [PLAN_TAGS.plan]: 'gold' }, /not one of free, pro, business, enterprise/],
    ['a misspelt plan', { [PLAN_TAGS.plan]: 'enterprize' }, /not one of/],
    ['an empty plan', { [PLAN_TAGS.plan]: '  ' }, /not one of/],
    ['the plan tag key in another case', { 'Petstore:Plan': 'pro' }, /missing tag/],
  ])('refuses %s', (_, tags, reason) => {
    const result = planFromTags(tags)
    expect(result).toEqual({ error: expect.stringMatching(reason) })
  })

  it.each([
    ['without perMinute', enterprise(undefined, '1000'), /petstore:perMinute/],
    ['without perDay', enterprise('10', undefined), /petstore:perDay/],
    [
      'without either (no fallback to default Enterprise limits)',
      enterprise(),
      /petstore:perMinute/,
    ],
    ['with perMinute 0', enterprise('0', '1000'), /petstore:perMinute/],
    ['with a negative perMinute', enterprise('-5', '1000'), /petstore:perMinute/],
    ['with a fractional perMinute', enterprise('1.5', '1000'), /petstore:perMinute/],
    ['with an exponent', enterprise('1e3', '1000000'), /petstore:perMinute/],
    ['with a sign', enterprise('+10', '1000'), /petstore:perMinute/],
    ['with a leading zero', enterprise('010', '1000'), /petstore:perMinute/],
    ['with a hex perDay', enterprise('10', '0x100'), /petstore:perDay/],
    ['with a non-numeric perDay', enterprise('10', 'lots'), /petstore:perDay/],
    ['with an empty perDay', enterprise('10', ''), /petstore:perDay/],
    ['with an unsafe integer', enterprise('10', '9007199254740993'), /petstore:perDay/],
    ['with perDay below perMinute', enterprise('1000', '999'), /perDay is below/],
  ])('refuses an enterprise plan %s', (_, tags, reason) => {
    expect(planFromTags(tags)).toEqual({ error: expect.stringMatching(reason) })
  })
})
