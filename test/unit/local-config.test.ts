import { describe, expect, it } from 'vitest'
import { LocalConfigError, readLocalConfig } from '#local/local-config.ts'

describe('local config: PETSTORE_AUTHORIZER_CACHE_TTL', () => {
  it('defaults to 0 (no cache: a revoked local key stops at once)', () => {
    expect(readLocalConfig({}).authorizerCacheTtlSeconds).toBe(0)
  })

  it('reads seconds from 0 to 3600, as API Gateway accepts', () => {
    expect(readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: '60' }).authorizerCacheTtlSeconds).toBe(
      60,
    )
    expect(
      readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: '3600' }).authorizerCacheTtlSeconds,
    ).toBe(3600)
  })

  it.each(['3601', '-1', '1.5', 'sixty'])('refuses %s', (value) => {
    expect(() => readLocalConfig({ PETSTORE_AUTHORIZER_CACHE_TTL: value })).toThrow(
      LocalConfigError,
    )
  })
})
