import { describe, expect, it } from 'vitest'
import {
  FAILED_AUTH_LIMIT,
  FAILED_AUTH_WINDOW_MS,
  FailedAuthLimiter,
} from '#local/gateway/failed-auth-limiter.ts'

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0)

const clockAt = (start: number) => {
  let now = start
  return { clock: () => now, advance: (ms: number) => (now += ms) }
}

const fail = (limiter: FailedAuthLimiter, address: string, times: number) => {
  for (let i = 0; i < times; i += 1) limiter.record(address)
}

describe('local failed-authentication limit per address', () => {
  it('refuses an address only past the limit, until its minute ends', () => {
    const time = clockAt(T0)
    const limiter = new FailedAuthLimiter({ clock: time.clock })
    fail(limiter, '10.0.0.1', FAILED_AUTH_LIMIT)
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBeUndefined()
    limiter.record('10.0.0.1')
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(FAILED_AUTH_WINDOW_MS / 1000)
    // Retry-After counts down to the end of the window that began with the first failure.
    time.advance(45_000)
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(15)
    time.advance(14_999)
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBeCloseTo(0.001)
    time.advance(1)
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBeUndefined()
  })

  it('gives an address a fresh allowance in its next window', () => {
    const time = clockAt(T0)
    const limiter = new FailedAuthLimiter({ clock: time.clock, limit: 3 })
    fail(limiter, 'a', 4)
    expect(limiter.retryAfterSeconds('a')).toBeDefined()
    time.advance(FAILED_AUTH_WINDOW_MS)
    fail(limiter, 'a', 3)
    expect(limiter.retryAfterSeconds('a')).toBeUndefined()
    limiter.record('a')
    expect(limiter.retryAfterSeconds('a')).toBe(FAILED_AUTH_WINDOW_MS / 1000)
  })

  it('never refuses other addresses', () => {
    const limiter = new FailedAuthLimiter({ clock: () => T0, limit: 3 })
    fail(limiter, 'attacker', 100)
    fail(limiter, 'neighbour', 3)
    expect(limiter.retryAfterSeconds('attacker')).toBeDefined()
    expect(limiter.retryAfterSeconds('neighbour')).toBeUndefined()
    expect(limiter.retryAfterSeconds('stranger')).toBeUndefined()
  })

  it('stays bounded without letting a few new addresses lift a refusal', () => {
    const time = clockAt(T0)
    const limiter = new FailedAuthLimiter({ clock: time.clock, limit: 1, maxAddresses: 3 })
    fail(limiter, 'attacker', 2)
    time.advance(1)
    // Fewer newcomers than the bound: the refusal stands (a wholesale reset would lift it).
    fail(limiter, 'b', 1)
    fail(limiter, 'c', 1)
    expect(limiter.retryAfterSeconds('attacker')).toBeDefined()
    // Past the bound, the oldest window goes first.
    fail(limiter, 'd', 2)
    expect(limiter.retryAfterSeconds('attacker')).toBeUndefined()
    expect(limiter.retryAfterSeconds('d')).toBeDefined()
  })
})
