import { describe, expect, it } from 'vitest'
import {
  isWellFormedApiKey,
  MAX_AUTHORIZATION_LENGTH,
  parseBearerToken,
} from '#shared/auth/bearer-token.ts'

const KEY = 'dev-free-0123456789abcdef0123'

describe('parseBearerToken', () => {
  it('returns the token of a well-formed header', () => {
    expect(parseBearerToken(`Bearer ${KEY}`)).toBe(KEY)
  })

  // RFC 9110 §11.1: the auth scheme is case-insensitive; docs/api.md writes it `Bearer`.
  it.each(['bearer', 'BEARER', 'BeArEr'])('accepts the scheme spelled %s', (scheme) => {
    expect(parseBearerToken(`${scheme} ${KEY}`)).toBe(KEY)
  })

  // RFC 6750 §2.1: `"Bearer" 1*SP b64token`, with at most 16 spaces so the header stays bounded.
  it.each([
    ['two spaces after the scheme', `Bearer  ${KEY}`],
    ['16 spaces after the scheme', `Bearer${' '.repeat(16)}${KEY}`],
  ])('accepts %s', (_label, header) => {
    expect(parseBearerToken(header)).toBe(KEY)
  })

  it.each(['abc-._~+/XYZ09', 'token==', 'a', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'])(
    'returns the b64token %s unchanged',
    (token) => {
      expect(parseBearerToken(`Bearer ${token}`)).toBe(token)
    },
  )

  it.each([
    ['a missing header', undefined],
    ['null', null],
    ['an empty header', ''],
    ['only spaces', '   '],
    ['the Basic scheme', 'Basic ZGV2OnNlY3JldA=='],
    ['the Token scheme', `Token ${KEY}`],
    ['the key alone', KEY],
    ['the scheme glued to the token', `Bearer${KEY}`],
    ['a tab between scheme and token', `Bearer\t${KEY}`],
    ['no token', 'Bearer'],
    ['no token after the space', 'Bearer '],
    ['two tokens', `Bearer ${KEY} ${KEY}`],
    ['two credentials', `Bearer ${KEY}, Bearer ${KEY}`],
    ['a colon', 'Bearer abc:def'],
    ['a dollar sign', 'Bearer abc$def'],
    ['a quote', 'Bearer "abcdef"'],
    ['padding before the end', 'Bearer abc=def'],
    ['padding only', 'Bearer ='],
    ['a non-ASCII character', 'Bearer clé-secrète'],
    ['a line break', `Bearer ${KEY}\nX-Injected: 1`],
    ['a NUL byte', `Bearer ${KEY}\u0000`],
    ['17 spaces after the scheme', `Bearer${' '.repeat(17)}${KEY}`],
    // HTTP parsing strips white space around a header value before the gateway or the authorizer
    // sees it, so a value that still has some is not one HTTP delivered.
    ['a leading space', ` Bearer ${KEY}`],
    ['a trailing space', `Bearer ${KEY} `],
    ['a leading and trailing tab', `\tBearer ${KEY}\t`],
    ['a trailing line break', `Bearer ${KEY}\n`],
  ])('returns undefined for %s', (_label, header) => {
    expect(parseBearerToken(header)).toBeUndefined()
  })

  it(`accepts the longest header a key can make (${MAX_AUTHORIZATION_LENGTH} characters) and refuses a longer one`, () => {
    const longest = `Bearer${' '.repeat(16)}${'a'.repeat(128)}`
    expect(longest).toHaveLength(MAX_AUTHORIZATION_LENGTH)
    expect(parseBearerToken(longest)).toBe('a'.repeat(128))
    expect('a'.repeat(128)).toSatisfy(isWellFormedApiKey)
    expect(parseBearerToken(`${longest}a`)).toBeUndefined()
    expect(parseBearerToken(`Bearer ${'a'.repeat(100_000)}`)).toBeUndefined()
  })
})

describe('isWellFormedApiKey', () => {
  it.each([
    ['20 characters', 'a'.repeat(20)],
    ['128 characters', 'a'.repeat(128)],
    ['the bearer alphabet', 'AZaz09-._~+/AZaz09-._~+/'],
    ['trailing padding', `${'a'.repeat(20)}==`],
    ['128 characters with the padding', `${'a'.repeat(126)}==`],
    ['a generated local key', KEY],
  ])('accepts %s', (_label, key) => {
    expect(key).toSatisfy(isWellFormedApiKey)
  })

  it.each([
    ['19 characters', 'a'.repeat(19)],
    ['129 characters', 'a'.repeat(129)],
    ['an empty key', ''],
    ['a space', `${'a'.repeat(10)} ${'a'.repeat(10)}`],
    ['a colon', `${'a'.repeat(10)}:${'a'.repeat(10)}`],
    ['a comma', `${'a'.repeat(10)},${'a'.repeat(10)}`],
    ['padding inside', `${'a'.repeat(10)}=${'a'.repeat(10)}`],
    ['non-ASCII', `${'a'.repeat(19)}é`],
    // Padding is not key material: it does not count toward the 20.
    ['19 characters and padding', `${'a'.repeat(19)}=`],
    ['one character and 19 =', `a${'='.repeat(19)}`],
    ['three = of padding', `${'a'.repeat(20)}===`],
    ['129 characters with the padding', `${'a'.repeat(127)}==`],
    ['a trailing line break', `${'a'.repeat(20)}\n`],
    ['a trailing U+2028', `${'a'.repeat(20)}\u2028`],
  ])('refuses %s', (_label, key) => {
    expect(key).not.toSatisfy(isWellFormedApiKey)
  })

  it('accepts only keys that can travel as a bearer token', () => {
    const candidates = [
      KEY,
      `${'a'.repeat(20)}==`,
      `${'a'.repeat(10)}=${'a'.repeat(10)}`,
      `=${'a'.repeat(20)}`,
      'AZaz09-._~+/AZaz09-._~+/',
    ]
    for (const key of candidates) {
      if (isWellFormedApiKey(key)) expect(parseBearerToken(`Bearer ${key}`), key).toBe(key)
    }
    expect(candidates.filter(isWellFormedApiKey)).toHaveLength(3)
  })
})
