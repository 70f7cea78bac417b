import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { newProjectKey } from '#keys/api-key-value.ts'
import { generateKeyValue } from '#local/control-plane/control-plane-store.ts'
import { BEARER_TOKEN_VALIDATION_PATTERN } from '#shared/auth/bearer-token.ts'
import {
  authorizerAccepts,
  BEARER_TOKEN_CASES,
  trickyHeader,
} from '#test/fixtures/bearer-token-cases.ts'
import { TEST_MAC_SECRETS } from '#test/support/test-key-store.ts'

/** The local gateway compiles it this way; CI also runs the cases through java.util.regex. */
const pattern = new RegExp(BEARER_TOKEN_VALIDATION_PATTERN)

describe('BEARER_TOKEN_VALIDATION_PATTERN (the gateway check ahead of the authorizer)', () => {
  it.each(BEARER_TOKEN_CASES.map((c) => [c.name, c.header, c.expected] as const))(
    '%s',
    (_name, header, expected) => {
      expect(pattern.test(header)).toBe(expected)
      // The gateway never refuses what the authorizer would allow, and never lets through what it
      // would refuse: the two checks are the same set.
      expect(authorizerAccepts(header)).toBe(expected)
    },
  )

  it('agrees with the authorizer on generated headers near the grammar', () => {
    const options = { seed: 6750, numRuns: 2_000 }
    fc.assert(
      fc.property(trickyHeader, (header) => pattern.test(header) === authorizerAccepts(header)),
      options,
    )
    // Not a vacuous agreement: a good share of the generated headers are accepted, and refused.
    const accepted = fc.sample(trickyHeader, options).filter(authorizerAccepts).length
    expect(accepted).toBeGreaterThan(options.numRuns / 5)
    expect(accepted).toBeLessThan((options.numRuns * 4) / 5)
  })

  it.each(['gateway', 'store'] as const)('accepts every %s key the project makes', (kind) => {
    for (let i = 0; i < 200; i += 1) {
      const header = `Bearer ${newProjectKey(kind, TEST_MAC_SECRETS).value}`
      expect(header).toMatch(pattern)
      expect(header).toSatisfy(authorizerAccepts)
    }
  })

  it('accepts every value the local control plane generates, as API Gateway does (40 characters)', () => {
    for (let i = 0; i < 200; i += 1) {
      const value = generateKeyValue()
      expect(value).toHaveLength(40)
      expect(pattern.test(`Bearer ${value}`), value).toBe(true)
      expect(authorizerAccepts(`Bearer ${value}`), value).toBe(true)
    }
  })
})
