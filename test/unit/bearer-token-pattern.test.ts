import { describe, expect, it } from 'vitest'
import {
  BEARER_TOKEN_VALIDATION_PATTERN,
  isWellFormedApiKey,
  parseBearerToken,
} from '#shared/auth/bearer-token.ts'

const pattern = new RegExp(BEARER_TOKEN_VALIDATION_PATTERN)
const key = (length: number, padding = '') => `${'k'.repeat(length - padding.length)}${padding}`

/** What the authorizer itself accepts: a bearer token that is a well-formed API key. */
const authorizerAccepts = (header: string): boolean => {
  const token = parseBearerToken(header)
  return token !== undefined && isWellFormedApiKey(token)
}

const CASES: [string, string, boolean][] = [
  ['20-character key', `Bearer ${key(20)}`, true],
  ['128-character key', `Bearer ${key(128)}`, true],
  ['19-character key', `Bearer ${key(19)}`, false],
  ['129-character key', `Bearer ${key(129)}`, false],
  ['key with every allowed symbol', 'Bearer Ab0-._~+/Ab0-._~+/Ab0', true],
  ['trailing padding', `Bearer ${key(24, '==')}`, true],
  ['padding counted in the 128', `Bearer ${key(129, '=')}`, false],
  ['= inside the key', `Bearer ${key(10)}=${key(10)}`, false],
  ['lower-case scheme', `bearer ${key(30)}`, true],
  ['upper-case scheme', `BEARER ${key(30)}`, true],
  ['mixed-case scheme', `BeArEr ${key(30)}`, true],
  ['several spaces', `Bearer    ${key(30)}`, true],
  ['no space', `Bearer${key(30)}`, false],
  ['tab instead of space', `Bearer\t${key(30)}`, false],
  ['missing scheme', key(30), false],
  ['Basic scheme', `Basic ${key(30)}`, false],
  ['empty', '', false],
  ['scheme only', 'Bearer ', false],
  ['two tokens', `Bearer ${key(30)} ${key(30)}`, false],
  ['non-ASCII character', `Bearer ${key(29)}é`, false],
  ['comma', `Bearer ${key(20)},${key(5)}`, false],
]

describe('BEARER_TOKEN_VALIDATION_PATTERN (the gateway check ahead of the authorizer)', () => {
  it.each(CASES)('%s', (_name, header, expected) => {
    expect(pattern.test(header)).toBe(expected)
    // The gateway never refuses what the authorizer would allow, and never lets through what it
    // would refuse: the two checks are the same set.
    expect(authorizerAccepts(header)).toBe(expected)
  })
})
