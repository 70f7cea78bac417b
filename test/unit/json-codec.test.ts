import { describe, expect, it } from 'vitest'
import { HttpError } from '#shared/errors/http-error.ts'
import { parseJson, stringifyJson } from '#shared/http/json-codec.ts'

const invalidJsonError = (text: string): HttpError | undefined => {
  try {
    parseJson(text)
  } catch (error) {
    return error instanceof HttpError ? error : undefined
  }
  return undefined
}

describe('parseJson', () => {
  it('keeps the int64 bounds exact as BigInt', () => {
    expect(parseJson('{"max":9223372036854775807,"min":-9223372036854775808}')).toStrictEqual({
      max: 9223372036854775807n,
      min: -9223372036854775808n,
    })
  })

  it('keeps safe integers as numbers', () => {
    const parsed = parseJson('[0, 7, -7, 9007199254740991, -9007199254740991]') as unknown[]
    expect(parsed).toStrictEqual([0, 7, -7, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER])
    for (const value of parsed) expect(typeof value).toBe('number')
  })

  it('switches to BigInt right above 2^53 - 1, where doubles start rounding', () => {
    expect(parseJson('[9007199254740992, 9007199254740993]')).toStrictEqual([
      9007199254740992n,
      9007199254740993n,
    ])
  })

  it('leaves fractions and exponents as numbers', () => {
    expect(parseJson('[1.5, -0.25, 1e30, 2.0]')).toStrictEqual([1.5, -0.25, 1e30, 2])
  })

  it('revives large integers at any depth, in objects and arrays', () => {
    expect(
      parseJson(
        '{"pet":{"categoryId":9223372036854775807,"tags":[{"ids":[1,12345678901234567890]}]}}',
      ),
    ).toStrictEqual({
      pet: { categoryId: 9223372036854775807n, tags: [{ ids: [1, 12345678901234567890n] }] },
    })
  })

  it('keeps strings of digits as strings', () => {
    expect(parseJson('{"id":"9223372036854775807"}')).toStrictEqual({ id: '9223372036854775807' })
  })

  it.each([
    '{"__proto__":{"polluted":true}}',
    '{"pet":{"__proto__":{"polluted":true}}}',
    '[{"__proto__":1}]',
    '{"constructor":{"prototype":{"polluted":true}}}',
  ])('rejects %s with 400 invalid_json and pollutes nothing', (text) => {
    const error = invalidJsonError(text)
    expect(error?.code).toBe('invalid_json')
    expect(error?.status).toBe(400)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('throws a SyntaxError (not an HttpError) for text that is not JSON', () => {
    expect(() => parseJson('{"name":')).toThrow(SyntaxError)
  })
})

describe('stringifyJson', () => {
  it('writes BigInt digits verbatim', () => {
    expect(
      stringifyJson({ id: 1, categoryId: 9223372036854775807n, min: -9223372036854775808n }),
    ).toBe('{"id":1,"categoryId":9223372036854775807,"min":-9223372036854775808}')
  })

  it('writes BigInt inside arrays and nested objects, and small BigInt as plain numbers', () => {
    expect(stringifyJson([{ a: [12345678901234567890n, 5n] }])).toBe(
      '[{"a":[12345678901234567890,5]}]',
    )
  })

  it('writes everything else as JSON.stringify does', () => {
    const value = { name: 'Rex "the dog"', n: 1.5, ok: true, none: null, skip: undefined }
    expect(stringifyJson(value)).toBe(JSON.stringify(value))
  })
})

describe('round trip', () => {
  it.each([
    '{"id":1,"name":"Rex","categoryId":9223372036854775807,"status":"sold"}',
    '{"categoryId":-9223372036854775808}',
    '[9007199254740993,9007199254740991,1.5,"x",null,{"a":[true,false]}]',
  ])('gives back %s unchanged', (text) => {
    expect(stringifyJson(parseJson(text))).toBe(text)
  })
})
