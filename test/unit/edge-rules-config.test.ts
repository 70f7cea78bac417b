import { describe, expect, it } from 'vitest'
import {
  carriesKey,
  defaultEdgeNumbers,
  EDGE_ANSWERS,
  EDGE_RULES,
  inScope,
  keyCounterOf,
} from '#shared/edge/edge-rules-config.ts'
import { ERROR_STATUS } from '#shared/errors/error-codes.ts'

describe('the edge rules', () => {
  it('tell keyed requests by the header’s shape, as WAF can', () => {
    expect(carriesKey(`Bearer ${'k'.repeat(20)}`)).toBe(true)
    expect(carriesKey(`bEaReR ${'k'.repeat(128)}`)).toBe(true)
    expect(carriesKey(`Bearer ${'k'.repeat(19)}`)).toBe(false)
    expect(carriesKey(`Bearer ${'k'.repeat(200)}`)).toBe(false)
    expect(carriesKey('Basic Zm9vOmJhcg==Zm9vOmJhcg==')).toBe(false)
    expect(carriesKey(undefined)).toBe(false)
    expect(keyCounterOf(`BEARER \t  ${'K'.repeat(20)}`)).toBe(`bearer ${'k'.repeat(20)}`)
  })

  it('count every OPTIONS at the keyed ceiling, apart from keyed requests, and never a preflight as keyless', () => {
    const rule = (name: string) => EDGE_RULES.find((candidate) => candidate.name === name)
    const preflight = { method: 'OPTIONS', authorization: undefined, exempt: false }
    const keyless = { method: 'GET', authorization: undefined, exempt: false }
    expect(inScope(rule('PreflightPerAddress')?.scope ?? {}, preflight)).toBe(true)
    expect(inScope(rule('KeylessPerAddress')?.scope ?? {}, preflight)).toBe(false)
    expect(inScope(rule('KeylessPerAddress')?.scope ?? {}, keyless)).toBe(true)
    expect(inScope(rule('PreflightPerAddress')?.scope ?? {}, { ...preflight, exempt: true })).toBe(
      false,
    )
    const numbers = defaultEdgeNumbers(5_000, { perMinute: 5_000, perDay: 1_000_000 })
    const limitOf = (name: string) => {
      const found = rule(name)
      return found?.type === 'rate' ? found.limit(numbers) : undefined
    }
    expect(limitOf('PreflightPerAddress')).toBe(limitOf('KeyedPerAddress'))
    expect(limitOf('KeyedPerAddress')).toBe(150_000)
  })

  it('answer 429 in the API’s codes, and block for an hour by default, at a rate no customer’s errors reach', () => {
    for (const answer of Object.values(EDGE_ANSWERS)) expect(ERROR_STATUS[answer.code]).toBe(429)
    const production = defaultEdgeNumbers(5_000, { perMinute: 5_000, perDay: 1_000_000 })
    expect(production).toMatchObject({
      largestPlanPerMinute: 50_000,
      wafAutoBlockUnauthorizedPerMinute: 50_000,
      wafAutoBlockMinutes: 60,
    })
    expect(EDGE_ANSWERS.addressBlockedAutomatically.retryAfterSeconds(production)).toBe(3_600)
  })
})
