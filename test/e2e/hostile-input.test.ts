import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { contractViolations } from '#openapi/contract-validator.ts'
import { ROUTES, type Route } from '#shared/config/routes-config.ts'
import { ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { type HostileRequest, hostileRequest } from '#test/support/hostile-requests.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import {
  declaredStatusesOf,
  type FuzzCase,
  fuzzKindsOf,
  operationFuzzOf,
  reachableStatusesOf,
  routeForRequest,
} from '#test/support/operation-fuzz.ts'
import { rawExchange } from '#test/support/raw-http.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * Generated hostile requests over HTTP against the local server: any request at all
 * (test/support/hostile-requests.ts), and each operation's own, well-formed and malformed
 * (test/support/operation-fuzz.ts). Every answer must be one docs/api.md allows, never a 5xx,
 * with an Error body on every non-2xx, no stack trace, and keep the OpenAPI contract; a request
 * sent to a route gets only the statuses that route declares, and each operation's own requests
 * reach every status its route declares. The server must still answer afterwards.
 * PETSTORE_TEST_SCALE or PETSTORE_FUZZ_RUNS widens a run (test/support/test-scale.ts),
 * PETSTORE_FUZZ_SEED replays one (fast-check prints the seed and the shrunk request of any failure).
 */
const RUNS = scaled(300, 'PETSTORE_FUZZ_RUNS')
/** Each kind of an operation's own requests runs this often (every kind: the same share). */
const RUNS_PER_KIND = Math.max(8, Math.round(RUNS / 25))
const SEED = process.env.PETSTORE_FUZZ_SEED ? Number(process.env.PETSTORE_FUZZ_SEED) : undefined
const KEY = 'fuzz-enterprise-0123456789abcdef'
/**
 * A Free key spent before the runs: over its minute's limit until suspended for 15 minutes, so
 * every request with it gets 429. Only `Date` is faked (as in rate-limits.test.ts): the gateway,
 * the limiter and this test share a clock that starts 5 s into a UTC minute and moves 400 ms a
 * request while the key is spent (the gateway's usage-plan bucket would refuse a frozen burst
 * itself), then stands still, so the suspension outlasts the run; sockets and timers stay real.
 */
const START = Date.UTC(2026, 10, 22, 12, 0, 5)
const SPENT_KEY = 'fuzz-free-spent-0123456789abcdef'
/** Pets created before the runs, for the reads of an existing pet. */
const SEEDED_PETS = 5

/**
 * Statuses a request may get: any operation's success and error statuses (the route table, as the
 * OpenAPI document has them) and 404 for any other route; never a 5xx, and no 410 before a sunset.
 */
const ALLOWED = new Set(
  [404, ...ROUTES.flatMap(declaredStatusesOf)].filter((status) => status < 500 && status !== 410),
)

const openApi = JSON.parse(
  readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'),
) as {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>
}

let server: InProcessServer
let base: URL

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
  server = await startInProcessServer(
    // Limits no run reaches: every request with KEY gets past the rate limiter to the function.
    {
      PETSTORE_API_KEYS: `enterprise:${KEY},free:${SPENT_KEY}`,
      ENTERPRISE_LIMITS: '100000000/700000000',
    },
    { wrongKeysBeforeDelay: Number.MAX_SAFE_INTEGER },
  )
  base = new URL(server.baseUrl)
  // Refused requests past the minute's limit suspend the key for 15 minutes.
  for (let sent = 0; sent < 200; sent += 1) {
    vi.setSystemTime(Date.now() + 400)
    const answer = await send({
      method: 'GET',
      path: '/pets?limit=1',
      headers: { Authorization: `Bearer ${SPENT_KEY}` },
    })
    if (answer.text.includes('"key_suspended"')) return
  }
  throw new Error('the spent key was never suspended')
}, 60_000)
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

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

// --- properties --------------------------------------------------------------------------------

const STACK_TRACE = /\bat (?:async )?\S+ \(|\.ts:\d+:\d+|\.m?js:\d+:\d+|node:internal/

/** The Error bodies of the local server's HTTP layer, which answers before any route. */
const HTTP_LAYER_REFUSAL =
  /"message":"(The request is not valid HTTP\.|The request line and headers are larger than \d+ bytes\.|The request was not received in time\.)"/

const problemsWith = (req: HostileRequest, answer: Answer): string[] => {
  const problems: string[] = []
  // A CORS preflight of a resource answers 204 with no body (docs/api.md, "Browsers").
  const preflight = req.method === 'OPTIONS' && answer.status === 204 && answer.text === ''
  if (!ALLOWED.has(answer.status) && !preflight) {
    problems.push(`status ${answer.status} not allowed`)
  }
  const route = routeForRequest(req)
  if (route && !declaredStatusesOf(route).includes(answer.status) && !preflight) {
    problems.push(
      `${route.operationId} answered ${answer.status}, which its route does not declare: add it to ${route.operationId}'s errors in shared/config/routes-config.ts (a JSON body brings 413 and 415) or find why it is answered`,
    )
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
  if (problems.length === 0 && !HTTP_LAYER_REFUSAL.test(answer.text)) {
    // Requests refused at the HTTP layer (headers over the limit, malformed HTTP:
    // local/gateway/client-error.ts) never reached the gateway's routes: every other answer must
    // keep the published contract.
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

/** Sends a case's requests, one after another or all at once, each checked as it is answered. */
const sendCase = async (fuzzCase: FuzzCase, onAnswer: (status: number) => void): Promise<void> => {
  const check = async (req: HostileRequest) => {
    const answer = await send(req)
    onAnswer(answer.status)
    const problems = problemsWith(req, answer)
    if (problems.length > 0) {
      throw new Error(
        `${req.method} ${req.path} → ${answer.status}: ${problems.join('; ')}\n${answer.text.slice(0, 300)}`,
      )
    }
  }
  if (fuzzCase.together) await Promise.all(fuzzCase.requests.map(check))
  else for (const req of fuzzCase.requests) await check(req)
}

/**
 * An operation's generators, on pets made for it alone and for this run alone: a delete removes
 * none that another operation, or another run, reads.
 */
const fuzzOf = async (route: Route) => {
  const petIds: string[] = []
  for (let index = 0; index < SEEDED_PETS; index += 1) {
    const created = await send({
      method: 'POST',
      path: '/pets',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: `{"name":"${route.operationId} ${index}","categoryId":1}`,
    })
    petIds.push(String((JSON.parse(created.text) as { id: number }).id))
  }
  return operationFuzzOf(route.operationId, { key: KEY, petIds })
}

const runOptions = (numRuns: number) => ({
  numRuns,
  ...(SEED !== undefined ? { seed: SEED } : {}),
  endOnFailure: false,
})

describe('hostile input, generated', () => {
  it(`answers ${RUNS} generated hostile requests within the contract`, {
    timeout: 120_000,
  }, async () => {
    const seen = new Map<number, number>()
    const anyCase = fc.oneof(
      { weight: 6, arbitrary: hostileRequest(KEY).map((req): FuzzCase => ({ requests: [req] })) },
      ...(await Promise.all(
        ROUTES.map(async (route) => ({ weight: 1, arbitrary: (await fuzzOf(route)).wellFormed })),
      )),
    )
    await fc.assert(
      fc.asyncProperty(anyCase, (fuzzCase) =>
        sendCase(fuzzCase, (status) => seen.set(status, (seen.get(status) ?? 0) + 1)),
      ),
      runOptions(RUNS),
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

describe("each operation's own requests (the `fuzz` its folder declares), generated", () => {
  it.each(ROUTES.map((route): [string, Route] => [route.operationId, route]))(
    '%s answers only the statuses its route declares, and every one a healthy server can',
    { timeout: 120_000 },
    async (operationId, route) => {
      const kinds = fuzzKindsOf(await fuzzOf(route), {
        key: KEY,
        spentKey: SPENT_KEY,
      })
      const seen = new Map<number, Set<string>>()
      for (const [kind, arbitrary] of Object.entries(kinds)) {
        await fc.assert(
          fc.asyncProperty(arbitrary, (fuzzCase) =>
            sendCase(fuzzCase, (status) =>
              seen.set(status, (seen.get(status) ?? new Set()).add(kind)),
            ),
          ),
          runOptions(RUNS_PER_KIND),
        )
      }
      const runs = RUNS_PER_KIND * Object.keys(kinds).length
      expect(
        reachableStatusesOf(route)
          .filter((status) => !seen.has(status))
          .map(
            (status) =>
              `${operationId} never answered ${status} in ${runs} runs: add requests that get it to the fuzz of functions/${route.functionName}/${route.functionName}-fixtures.ts, or take it out of its route's errors if it cannot be answered`,
          ),
      ).toEqual([])
      console.info(
        `${operationId}: ${runs} runs, ${[...seen].map(([status, by]) => `${status} (${[...by].join(', ')})`).join(', ')}`,
      )
    },
  )
})
