import { describe, expect, it } from 'vitest'
import { addressMatcher } from '#functions/address-block/address-block-run.ts'
import {
  LocalEdge,
  LocalEdgeDelays,
  localEdgeNumbers,
  PREFLIGHT_BURST,
  sourceAddressOf,
  TARPIT_AFTER_REFUSALS,
  WRONG_KEY_DELAY_MS,
  WRONG_KEYS_BEFORE_DELAY,
} from '#local/edge/local-edge.ts'
import { STAGES } from '#shared/config/stages-config.ts'
import { defaultEdgeNumbers } from '#shared/edge/edge-rules-config.ts'

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0)
const KEYED = `Bearer ${'k'.repeat(40)}`

const clockAt = (start: number) => {
  let now = start
  return { clock: () => now, advance: (ms: number) => (now += ms) }
}

describe('the local edge', () => {
  it("takes the staging stage's numbers", () => {
    expect(localEdgeNumbers()).toEqual(
      defaultEdgeNumbers(STAGES.staging.throttleRateLimit, {
        perMinute: 5_000,
        perDay: 1_000_000,
      }),
    )
    expect(localEdgeNumbers()).toMatchObject({
      wafKeylessPer5Minutes: 1_500,
      wafKeyedPerAddressPerMinute: 30_000,
      largestPlanPerMinute: 10_000,
      wafAutoBlockUnauthorizedPerMinute: 10_000,
      wafAutoBlockMinutes: 60,
    })
  })

  it('refuses past a limit over a trailing window, counting its own refusals, and lets the address through once the window moved on', () => {
    const time = clockAt(T0)
    const edge = new LocalEdge({
      numbers: { ...localEdgeNumbers(), wafKeyedPerAddressPerMinute: 3 },
      clock: time.clock,
    })
    const keyed = () =>
      edge.evaluate({ address: '10.0.0.1', method: 'GET', authorization: KEYED })?.rule
    const said = [keyed()]
    for (let i = 0; i < 3; i += 1) {
      time.advance(10_000)
      said.push(keyed())
    }
    expect(said).toEqual([undefined, undefined, undefined, 'KeyedPerAddress'])
    // WAF counts what it refuses: at 60 s the first one left the window, four remain.
    time.advance(30_000)
    expect(keyed()).toBe('KeyedPerAddress')
    // At 100 s only the last three (50 s, 60 s and this one) are in the window.
    time.advance(40_000)
    expect(keyed()).toBeUndefined()
    // Another address has a counter of its own.
    expect(edge.evaluate({ address: '10.0.0.2', method: 'GET', authorization: KEYED })).toBe(
      undefined,
    )
  })

  it('answers with the rule’s Error body and its static Retry-After', () => {
    const edge = new LocalEdge({
      numbers: { ...localEdgeNumbers(), wafKeylessPer5Minutes: 10 },
      clock: () => T0,
      blocked: { automatic: (address) => address === '10.0.0.9' },
    })
    for (let i = 0; i < 10; i += 1)
      edge.evaluate({ address: 'a', method: 'GET', authorization: undefined })
    const refusal = edge.evaluate({ address: 'a', method: 'GET', authorization: undefined })
    expect(refusal?.error).toMatchObject({
      code: 'too_many_failed_auths',
      status: 429,
      headers: { 'Retry-After': '60' },
    })
    const blocked = edge.evaluate({ address: '10.0.0.9', method: 'GET', authorization: KEYED })
    expect(blocked?.rule).toBe('AutoBlockedAddresses')
    expect(blocked?.error.headers).toEqual({ 'Retry-After': '3600' })
  })

  it('skips exempt addresses in the per-address rules and the automatic block, never the keyless or per-key rules', () => {
    const edge = new LocalEdge({
      numbers: { ...localEdgeNumbers(), wafKeyedPerAddressPerMinute: 1, wafKeylessPer5Minutes: 1 },
      clock: () => T0,
      exempt: ['127.0.0.1/32'],
      blocked: { automatic: () => true },
    })
    const from = (address: string, authorization?: string, method = 'GET') =>
      edge.evaluate({ address, method, authorization })?.rule
    expect([from('127.0.0.1', KEYED), from('127.0.0.1', KEYED)]).toEqual([undefined, undefined])
    expect([
      from('127.0.0.1', undefined, 'OPTIONS'),
      from('127.0.0.1', undefined, 'OPTIONS'),
    ]).toEqual([undefined, undefined])
    expect([from('127.0.0.1'), from('127.0.0.1')]).toEqual([undefined, 'KeylessPerAddress'])
    expect(from('127.0.0.2', KEYED)).toBe('AutoBlockedAddresses')
  })

  it('keeps a bounded number of instances per rule: random key values cost memory only up to it', () => {
    const time = clockAt(T0)
    const edge = new LocalEdge({
      numbers: { ...localEdgeNumbers(), wafKeyedPerAddressPerMinute: 1_000 },
      clock: time.clock,
      maxInstances: 1_000,
    })
    for (let i = 0; i < 5_000; i += 1) {
      edge.evaluate({
        address: '10.0.0.1',
        method: 'GET',
        authorization: `Bearer forged${String(i).padStart(30, '0')}`,
      })
    }
    // Still answering, and the address's own counter was never dropped: past its ceiling.
    expect(edge.evaluate({ address: '10.0.0.1', method: 'GET', authorization: KEYED })?.rule).toBe(
      'KeyedPerAddress',
    )
  })

  it('reads a dual-stack listener’s IPv4-mapped addresses as IPv4, and CIDRs of both versions', () => {
    expect(sourceAddressOf('::ffff:127.0.0.2')).toBe('127.0.0.2')
    expect(sourceAddressOf('::1')).toBe('::1')
    expect(sourceAddressOf(undefined)).toBe('127.0.0.1')
    const matches = addressMatcher(['203.0.113.0/28', '2001:db8::/32'])
    expect(['203.0.113.5', '203.0.113.16', '2001:db8::1', '2001:db9::1'].map(matches)).toEqual([
      true,
      false,
      true,
      false,
    ])
  })
})

describe('the local edge’s delays', () => {
  it('paces an address’s preflights to the ceiling’s rate after a burst, and leaves other requests and addresses alone', () => {
    const time = clockAt(T0)
    const delays = new LocalEdgeDelays({ numbers: localEdgeNumbers(), clock: time.clock })
    // 30,000 a minute: 500 a second, so a burst of 500 at once, then one every 2 ms.
    const burst = Math.max(PREFLIGHT_BURST, 500)
    const waits = Array.from({ length: burst + 3 }, () =>
      delays.preflightDelayMs('10.0.0.1', 'OPTIONS'),
    )
    expect(waits.slice(0, burst)).toEqual(Array(burst).fill(0))
    expect(waits.slice(burst)).toEqual([2, 4, 6])
    expect(delays.preflightDelayMs('10.0.0.1', 'GET')).toBe(0)
    expect(delays.preflightDelayMs('10.0.0.2', 'OPTIONS')).toBe(0)
    // A second later the address has its burst back.
    time.advance(2_000)
    expect(delays.preflightDelayMs('10.0.0.1', 'OPTIONS')).toBe(0)
  })

  it('answers wrong keys late past a few a minute from one address, and slows a connection past many refusals', () => {
    const time = clockAt(T0)
    const delays = new LocalEdgeDelays({ numbers: localEdgeNumbers(), clock: time.clock })
    const wrong = Array.from({ length: WRONG_KEYS_BEFORE_DELAY + 1 }, () =>
      delays.wrongKeyDelayMs('10.0.0.1'),
    )
    expect(wrong.at(-2)).toBe(0)
    expect(wrong.at(-1)).toBe(WRONG_KEY_DELAY_MS)
    expect(delays.wrongKeyDelayMs('10.0.0.2')).toBe(0)
    time.advance(60_000)
    expect(delays.wrongKeyDelayMs('10.0.0.1')).toBe(0)
    const slowed = Array.from({ length: TARPIT_AFTER_REFUSALS + 1 }, () =>
      delays.slowAfterRefusal('10.0.0.1'),
    )
    expect(slowed.indexOf(true)).toBe(TARPIT_AFTER_REFUSALS)
  })
})
