import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { describe, expect, it } from 'vitest'
import { AuthorizerCache, toAuthorization } from '#local/gateway/authorizer-cache.ts'
import { secretDigest } from '#local/gateway/secret-digest.ts'

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0)
const HEADER = 'Bearer key-0123456789abcdefghij'
const KEY = 'key-0123456789abcdefghij'

const clockAt = (start: number) => {
  let now = start
  return { clock: () => now, advance: (ms: number) => (now += ms) }
}

const allow = (effect: 'Allow' | 'Deny' = 'Allow'): APIGatewayAuthorizerResult => ({
  principalId: 'key-id',
  usageIdentifierKey: KEY,
  context: { keyId: 'key-id', plan: 'free', perMinute: 60, perDay: 1000 },
  policyDocument: {
    Version: '2012-10-17',
    Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: '*' }],
  },
})

describe('local authorizer result cache', () => {
  it('reuses an answer, allow or denial, for the TTL, then asks again', () => {
    const time = clockAt(T0)
    const cache = new AuthorizerCache({ ttlSeconds: 60, clock: time.clock })
    const answer = toAuthorization(allow())
    cache.put(HEADER, answer)
    cache.put('Bearer other-0123456789abcdefghij', 'denied')
    time.advance(59_999)
    expect(cache.get(HEADER)).toBe(answer)
    expect(cache.get('Bearer other-0123456789abcdefghij')).toBe('denied')
    time.advance(1)
    expect(cache.get(HEADER)).toBeUndefined()
  })

  it('keys entries by the exact header value', () => {
    const cache = new AuthorizerCache({ ttlSeconds: 60, clock: () => T0 })
    cache.put(HEADER, 'denied')
    expect(cache.get(`bearer ${KEY}`)).toBeUndefined()
  })

  it('caches nothing with TTL 0', () => {
    const cache = new AuthorizerCache({ ttlSeconds: 0, clock: () => T0 })
    cache.put(HEADER, 'denied')
    expect(cache.get(HEADER)).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('sweeps expired entries, so distinct tokens do not accumulate', () => {
    const time = clockAt(T0)
    const cache = new AuthorizerCache({ ttlSeconds: 60, clock: time.clock })
    for (let i = 0; i < 100; i += 1) cache.put(`Bearer token-${i}-0123456789abcdef`, 'denied')
    time.advance(60_000)
    cache.put(HEADER, 'denied')
    expect(cache.size).toBe(1)
  })

  it('keeps the metered key as a digest only, never in clear', () => {
    const kept = toAuthorization(allow())
    expect(kept.usageKeyDigest).toBe(secretDigest(KEY))
    expect(JSON.stringify(kept)).not.toContain(KEY)
    expect(kept).toMatchObject({ allowed: true })
    expect(toAuthorization(allow('Deny'))).toMatchObject({ allowed: false })
  })
})
