import fc from 'fast-check'
import type { HostileRequest } from '#functions/operation-fixture-types.ts'

export type { HostileRequest }

/**
 * Hostile requests of any shape, aimed at no operation in particular (test/e2e/hostile-input.test.ts):
 * malformed and deeply nested JSON, huge strings, wrong types, prototype keys, control and non-BMP
 * characters, int64 edges, odd query strings, oversized headers and bodies, wrong methods and
 * paths, odd Authorization values. Each operation's own requests, well-formed and malformed, are
 * declared in its folder (test/support/operation-fuzz.ts), and build on the pieces exported here.
 */
export const INT64_EDGES = [
  '0',
  '-0',
  '1',
  '-1',
  '9007199254740991',
  '9007199254740992',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775808',
  '-9223372036854775809',
  '1e3',
  '1e18',
  '1e308',
  '1.5',
  '0.0',
  '1E400',
  '00012',
  '99999999999999999999999999999',
]

/**
 * Any code point, lone surrogates included: fast-check's `unit: 'binary'` generates the same, but
 * builds a map of all 1,114,112 code points when first used (1.6 s of a worker's CPU on every run).
 */
const anyCodePoint = fc
  .integer({ min: 0, max: 0x10ffff })
  .map((codePoint) => String.fromCodePoint(codePoint))

export const oddText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: anyCodePoint, maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\t\n',
    '\u0000',
    '\u202e',
    '\ud83d\udc36',
    '\ud800',
    'a'.repeat(201),
    'x'.repeat(5_000),
  ),
)

const jsonValue = fc.oneof(
  fc.constantFrom(...INT64_EDGES),
  oddText.map((text) => JSON.stringify(text)),
  fc.json({ maxDepth: 3 }),
  fc.constantFrom('null', 'true', '[]', '{}', '{"__proto__":{"polluted":1}}'),
)

const memberName = fc.oneof(
  fc.constantFrom(
    'name',
    'categoryId',
    'status',
    'id',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
  ),
  oddText,
)

/** A JSON object built as text, so int64 literals and duplicate or prototype keys survive. */
export const petBody = fc
  .record({
    name: fc.oneof(
      oddText.map((text) => JSON.stringify(text)),
      jsonValue,
    ),
    categoryId: jsonValue,
    status: fc.oneof(
      fc.constantFrom('"available"', '"pending"', '"sold"', '"AVAILABLE"', '""'),
      jsonValue,
    ),
    extra: fc.array(fc.tuple(memberName, jsonValue), { maxLength: 3 }),
    drop: fc.subarray(['name', 'categoryId', 'status']),
  })
  .map(({ name, categoryId, status, extra, drop }) => {
    const members = Object.entries({ name, categoryId, status })
      .filter(([member]) => !drop.includes(member))
      .map(([member, value]) => `${JSON.stringify(member)}:${value}`)
    for (const [member, value] of extra) members.push(`${JSON.stringify(member)}:${value}`)
    return `{${members.join(',')}}`
  })

const deeplyNested = fc
  .integer({ min: 100, max: 5_000 })
  .map((depth) => `{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`)

const anyBody = fc.oneof(
  { weight: 5, arbitrary: petBody },
  { weight: 1, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 1, arbitrary: deeplyNested },
  { weight: 1, arbitrary: petBody.map((text) => text.slice(0, Math.max(1, text.length - 3))) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 16 * 1024 - 20, max: 200_000 })
      .map((size) => `{"name":"${'a'.repeat(size)}","categoryId":1}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: anyCodePoint, maxLength: 200 }) },
)

const percentEncoded = fc.constantFrom(
  '%2F',
  '%00',
  '%FF',
  '%E2%80%AE',
  '%',
  '%zz',
  '%2e%2e',
  '..',
  '.',
)
export const pathSegment = fc.oneof(
  fc.constantFrom(...INT64_EDGES),
  fc.stringMatching(/^[A-Za-z0-9._~-]{0,30}$/),
  percentEncoded,
)
const path = fc.oneof(
  { weight: 4, arbitrary: fc.constant('/pets') },
  { weight: 4, arbitrary: pathSegment.map((segment) => `/pets/${segment}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/store/orders',
      '/pets/1/extra',
      '//pets',
      '/PETS',
      '/pets/',
      '/',
      '',
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(pathSegment, { minLength: 1, maxLength: 4 })
      .map((segments) => `/${segments.join('/')}`),
  },
)

export const queryValue = fc.oneof(
  fc.constantFrom(
    '20',
    '0',
    '101',
    '-1',
    '1.5',
    'abc',
    '',
    '1e2',
    '9223372036854775808',
    'available',
    'sold',
    'AVAILABLE',
  ),
  fc.stringMatching(/^[A-Za-z0-9._~-]{0,40}$/),
  percentEncoded,
)
const query = fc
  .array(
    fc.tuple(fc.constantFrom('limit', 'status', 'cursor', 'other', '', '__proto__'), queryValue),
    { maxLength: 5 },
  )
  .map((pairs) =>
    pairs.length === 0 ? '' : `?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`,
  )

/** Header values must stay within what HTTP can carry (no CR, LF or NUL), or Node refuses to send. */
export const headerText = fc.stringMatching(/^[\x20-\x7e]{0,300}$/)
/** Mostly the key itself; otherwise near misses and noise. */
const authorization = (key: string) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(`Bearer ${key}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `bearer   ${key}`,
        'Bearer',
        'Bearer ',
        `Basic ${key}`,
        `Bearer ${key}x`,
        `Bearer ${'k'.repeat(600)}`,
        '',
      ),
    },
    { weight: 1, arbitrary: headerText },
  )

/** Any request at all, `key` being a key the server knows (sent most of the time). */
export const hostileRequest = (key: string): fc.Arbitrary<HostileRequest> =>
  fc
    .record({
      method: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom('GET', 'POST') },
        { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE') },
      ),
      path: fc.tuple(path, query).map(([p, q]) => `${p}${q}`),
      authorization: fc.option(authorization(key), { nil: undefined, freq: 8 }),
      contentType: fc.option(
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'application/problem+json',
          'text/plain',
          'application/x-www-form-urlencoded',
          '',
        ),
        { nil: undefined, freq: 8 },
      ),
      idempotencyKey: fc.option(headerText, { nil: undefined, freq: 2 }),
      // Expectations the server does not know (100-continue is local-security.test.ts's subject).
      expectation: fc.option(fc.constantFrom('teapot', 'foo=bar', ''), {
        nil: undefined,
        freq: 12,
      }),
      withoutHost: fc.integer({ min: 0, max: 14 }).map((n) => n === 0),
      padding: fc.option(fc.integer({ min: 1, max: 12_000 }), { nil: undefined, freq: 10 }),
      body: fc.option(anyBody, { nil: undefined, freq: 6 }),
    })
    .map(
      ({
        method,
        path: target,
        authorization: auth,
        contentType,
        idempotencyKey,
        expectation,
        withoutHost,
        padding,
        body: payload,
      }) => {
        const headers: Record<string, string> = {}
        if (auth !== undefined) headers.Authorization = auth
        if (contentType !== undefined) headers['Content-Type'] = contentType
        if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey
        if (expectation !== undefined) headers.Expect = expectation
        if (padding !== undefined) headers['X-Padding'] = 'p'.repeat(padding)
        return {
          method,
          path: target,
          headers,
          ...(withoutHost ? { setHost: false } : {}),
          ...(payload !== undefined ? { body: payload } : {}),
        }
      },
    )
