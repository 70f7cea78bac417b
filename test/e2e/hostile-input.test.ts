import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contractViolations } from '#openapi/contract-validator.ts'
import { errorStatusesOf, ROUTES } from '#shared/config/routes-config.ts'
import { ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import { rawExchange } from '#test/support/raw-http.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * Generated hostile requests over HTTP against the local server: malformed and deeply nested
 * JSON, huge strings, wrong types, prototype keys, control and non-BMP characters, int64 edges,
 * odd query strings, oversized headers and bodies, wrong methods and paths, odd Authorization
 * values. Every answer must be one docs/api.md allows, never a 5xx, with an
 * Error body on every non-2xx, no stack trace, and keep the OpenAPI contract; the server must
 * still answer afterwards. PETSTORE_TEST_SCALE or PETSTORE_FUZZ_RUNS widens a run
 * (test/support/test-scale.ts), PETSTORE_FUZZ_SEED replays one (fast-check prints the seed and
 * the shrunk request of any failure).
 */
const RUNS = scaled(300, 'PETSTORE_FUZZ_RUNS')
const SEED = process.env.PETSTORE_FUZZ_SEED ? Number(process.env.PETSTORE_FUZZ_SEED) : undefined
const KEY = 'fuzz-enterprise-0123456789abcdef'

/**
 * Statuses a request may get: any operation's success and error statuses (the route table, as the
 * OpenAPI document has them) and 404 for any other route; never a 5xx, and no 410 before a sunset.
 */
const ALLOWED = new Set(
  [404, ...ROUTES.flatMap((route) => [route.successStatus, ...errorStatusesOf(route)])].filter(
    (status) => status < 500 && status !== 410,
  ),
)

const openApi = JSON.parse(
  readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'),
) as {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>
}

let server: InProcessServer
let base: URL

beforeAll(async () => {
  server = await startInProcessServer(
    // Limits no run reaches: every request gets past the rate limiter to the function.
    { PETSTORE_API_KEYS: `enterprise:${KEY}`, ENTERPRISE_LIMITS: '100000000/700000000' },
    { failedAuthLimit: Number.MAX_SAFE_INTEGER },
  )
  base = new URL(server.baseUrl)
})
afterAll(async () => {
  await server?.stop()
})

interface HostileRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
  /** false: no Host header at all (node:http adds one otherwise). */
  setHost?: boolean
}

interface Answer {
  status: number
  headers: Headers
  text: string
}

const send = (req: HostileRequest): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: base.hostname,
        port: base.port,
        method: req.method,
        path: `/v1${req.path}`,
        headers: req.headers,
        setHost: req.setHost ?? true,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const headers = new Headers()
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) headers.set(name, [value].flat().join(', '))
          }
          resolve({
            status: res.statusCode ?? 0,
            headers,
            text: Buffer.concat(chunks).toString('utf8'),
          })
        })
      },
    )
    outgoing.on('error', reject)
    outgoing.end(req.body)
  })

// --- generators --------------------------------------------------------------------------------

const INT64_EDGES = [
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

const oddText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
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
const petBody = fc
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

const body = fc.oneof(
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
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
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
const pathSegment = fc.oneof(
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

const queryValue = fc.oneof(
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
const headerText = fc.stringMatching(/^[\x20-\x7e]{0,300}$/)
const authorization = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`Bearer ${KEY}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      `bearer   ${KEY}`,
      'Bearer',
      'Bearer ',
      `Basic ${KEY}`,
      `Bearer ${KEY}x`,
      `Bearer ${'k'.repeat(600)}`,
      '',
    ),
  },
  { weight: 1, arbitrary: headerText },
)

const hostileRequest: fc.Arbitrary<HostileRequest> = fc
  .record({
    method: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('GET', 'POST') },
      { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE') },
    ),
    path: fc.tuple(path, query).map(([p, q]) => `${p}${q}`),
    authorization: fc.option(authorization, { nil: undefined, freq: 8 }),
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
    expectation: fc.option(fc.constantFrom('teapot', 'foo=bar', ''), { nil: undefined, freq: 12 }),
    withoutHost: fc.integer({ min: 0, max: 14 }).map((n) => n === 0),
    padding: fc.option(fc.integer({ min: 1, max: 12_000 }), { nil: undefined, freq: 10 }),
    body: fc.option(body, { nil: undefined, freq: 6 }),
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

/** Well-formed creates with edge values that must succeed: names of every script, int64 edges. */
const validCreate: fc.Arbitrary<HostileRequest> = fc
  .record({
    name: fc
      .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
      .filter((name) => name.trim().length > 0),
    categoryId: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    status: fc.option(fc.constantFrom('available', 'pending', 'sold'), { nil: undefined }),
    idempotencyKey: fc.option(fc.stringMatching(/^[\x21-\x7e]{1,255}$/), { nil: undefined }),
  })
  .map(({ name, categoryId, status, idempotencyKey }) => ({
    method: 'POST',
    path: '/pets',
    headers: {
      Authorization: `Bearer ${KEY}`,
      'Content-Type': 'application/json',
      ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
    },
    body: `{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`,
  }))

/** Well-formed reads, so every run reaches the functions' 200s whatever its size. */
const validRead: fc.Arbitrary<HostileRequest> = fc
  .record({
    limit: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
    status: fc.option(fc.constantFrom('available', 'pending', 'sold'), { nil: undefined }),
  })
  .map(({ limit, status }) => {
    const query = new URLSearchParams({
      ...(limit === undefined ? {} : { limit: String(limit) }),
      ...(status === undefined ? {} : { status }),
    })
    return {
      method: 'GET',
      path: `/pets${query.size > 0 ? `?${query}` : ''}`,
      headers: { Authorization: `Bearer ${KEY}` },
    }
  })

const anyRequest = fc.oneof(
  { weight: 6, arbitrary: hostileRequest },
  { weight: 2, arbitrary: validCreate },
  { weight: 1, arbitrary: validRead },
)

// --- properties --------------------------------------------------------------------------------

const STACK_TRACE = /\bat (?:async )?\S+ \(|\.ts:\d+:\d+|\.m?js:\d+:\d+|node:internal/

const problemsWith = (req: HostileRequest, answer: Answer): string[] => {
  const problems: string[] = []
  // A CORS preflight of a resource answers 204 with no body (docs/api.md, "Browsers").
  const preflight = req.method === 'OPTIONS' && answer.status === 204 && answer.text === ''
  if (!ALLOWED.has(answer.status) && !preflight) {
    problems.push(`status ${answer.status} not allowed`)
  }
  if (STACK_TRACE.test(answer.text)) problems.push('a stack trace in the body')
  if (answer.status >= 300) {
    let error: { code?: string; message?: string; status?: number } | undefined
    try {
      error = JSON.parse(answer.text)
    } catch {
      problems.push('non-2xx without a JSON body')
    }
    if (error) {
      if (error.status !== answer.status)
        problems.push(`body status ${error.status} for ${answer.status}`)
      if (typeof error.message !== 'string' || error.message.length === 0)
        problems.push('no message')
      if (ERROR_STATUS[error.code as ErrorCode] !== answer.status)
        problems.push(`code ${error.code}`)
    }
  }
  if (problems.length === 0 && answer.headers.get('x-amzn-requestid') !== null) {
    // Requests refused at the HTTP layer (headers over the limit) never reached the gateway's
    // routes: every other answer must keep the published contract.
    problems.push(
      ...contractViolations({
        method: req.method,
        url: `${server.baseUrl}${req.path}`,
        status: answer.status,
        headers: answer.headers,
        text: answer.text,
      }),
    )
  }
  return problems
}

describe('allowed statuses', () => {
  // Deterministic, where the generator reaches a rare answer (a DELETE of an existing pet) only
  // one run in many: every answer the published document gives an operation is allowed.
  it('allow every non-5xx status openapi/openapi.json documents, 410 apart', () => {
    const documented = Object.values(openApi.paths).flatMap((methods) =>
      Object.values(methods).flatMap((operation) =>
        Object.keys(operation.responses).map((status) => ({
          status: Number(status),
          operationId: operation.operationId,
        })),
      ),
    )
    const missing = documented.filter(
      ({ status }) => status < 500 && status !== 410 && !ALLOWED.has(status),
    )
    expect(
      missing.map(({ status, operationId }) => `ALLOWED lacks ${status} (${operationId})`),
    ).toEqual([])
  })
})

describe('hostile input, found by generation and kept as examples', () => {
  it.each(['/pets?__proto__=', '/pets?__proto__=x&limit=2', '/pets?constructor=1'])(
    'GET %s treats prototype names as ordinary (ignored) parameters',
    async (target) => {
      const answer = await send({
        method: 'GET',
        path: target,
        headers: { Authorization: `Bearer ${KEY}` },
      })
      expect(answer.status).toBe(200)
    },
  )

  it('a __proto__ header is just a header', async () => {
    const answer = await send({
      method: 'GET',
      path: '/pets',
      headers: { Authorization: `Bearer ${KEY}`, ['__proto__']: 'x' },
    })
    expect(answer.status).toBe(200)
  })
})

describe('requests Node would answer on its own, found by probing and kept as examples', () => {
  const auth = () => `Host: ${base.host}\r\nAuthorization: Bearer ${KEY}\r\n`
  // Before: a bare 400, a bare 417, a connection closed without an answer, and two 500s. The
  // gateway gives the functions its own Host, so one the client left out changes nothing.
  it.each([
    [
      'an HTTP/1.1 request without Host',
      200,
      () => `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`,
    ],
    [
      'an Expect the server does not know',
      200,
      () => `GET /v1/pets HTTP/1.1\r\n${auth()}Expect: teapot\r\n\r\n`,
    ],
    ['CONNECT', 404, () => `CONNECT evil.example:443 HTTP/1.1\r\n${auth()}\r\n`],
    [
      'an absolute-form target that is no URL',
      400,
      () => `GET http://[/v1/pets HTTP/1.1\r\n${auth()}\r\n`,
    ],
    [
      'an absolute-form target with port 99999',
      400,
      () => `GET http://a:99999/v1/pets HTTP/1.1\r\n${auth()}\r\n`,
    ],
  ])('%s gets %i from the gateway', async (_, status, request) => {
    const answer = await rawExchange(base, request())
    expect(answer.status).toBe(status)
    const headers = new Headers(answer.headers)
    // Answered by the gateway (a request id), within the contract, an Error body if non-2xx.
    expect(headers.get('x-amzn-requestid')).toBeTruthy()
    const method = request().split(' ')[0] as string
    expect(
      problemsWith({ method, path: '/pets', headers: {} }, { status, headers, text: answer.body }),
    ).toEqual([])
  })
})

describe('hostile input, generated', () => {
  it(`answers ${RUNS} generated hostile requests within the contract`, {
    timeout: 120_000,
  }, async () => {
    const seen = new Map<number, number>()
    await fc.assert(
      fc.asyncProperty(anyRequest, async (req) => {
        const answer = await send(req)
        seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1)
        const problems = problemsWith(req, answer)
        if (problems.length > 0) {
          throw new Error(
            `${req.method} ${req.path} → ${answer.status}: ${problems.join('; ')}\n${answer.text.slice(0, 300)}`,
          )
        }
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: false },
    )
    // The run reached the functions, not only the gateway's refusals.
    expect(seen.get(201) ?? 0).toBeGreaterThan(0)
    expect(seen.get(200) ?? 0).toBeGreaterThan(0)
    expect(seen.get(400) ?? 0).toBeGreaterThan(0)
    // And the server still serves an ordinary request.
    const after = await send({
      method: 'GET',
      path: '/pets?limit=1',
      headers: { Authorization: `Bearer ${KEY}` },
    })
    expect(after.status).toBe(200)
  })
})
