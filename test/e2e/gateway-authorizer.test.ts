import { Agent, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { LocalEdge, localEdgeNumbers, TARPIT_AFTER_REFUSALS } from '#local/edge/local-edge.ts'
import {
  createLocalGateway,
  type LocalGatewayOptions,
  type ProxyHandler,
  type TokenAuthorizer,
} from '#local/gateway/local-gateway.ts'
import { BEARER_CHALLENGE, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { apiClient } from '#test/support/local-server.ts'

/** The functions here are stubs, not the service: their answers are not the contract's. */
const STUB_CLIENT = { contract: false }

/**
 * The local gateway's authorizer layer over HTTP, with a counting authorizer and a stub function
 * in place of the real ones: the token validation pattern answers before the authorizer runs, the
 * result cache reuses allows and denials for its TTL on the gateway's clock, a failed authorizer
 * is asked again, and a backstop refusal never reaches the function.
 */
const GOOD = 'good-key-0123456789abcdef'
const REVOKED = 'revoked-0123456789abcdef'
const BROKEN = 'broken-0123456789abcdefg'
const NO_PLAN = 'no-plan-0123456789abcdef'
const TTL_SECONDS = 60

let now = Date.UTC(2026, 10, 22, 12, 0, 0)
const calls = { authorizer: 0, function: 0 }

const authorizer: TokenAuthorizer = async (event) => {
  calls.authorizer += 1
  const key = event.authorizationToken.replace(/^bearer +/i, '')
  if (key === BROKEN) throw new Error('key store unreachable')
  if (key !== GOOD && key !== NO_PLAN) throw new Error(UNAUTHORIZED)
  const result: APIGatewayAuthorizerResult = {
    principalId: `id-${key.slice(0, 4)}`,
    usageIdentifierKey: key,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: '*' }],
    },
  }
  if (key === GOOD) result.context = { plan: 'free', ...PLAN_LIMITS.free }
  return result
}

const stub: ProxyHandler = async () => {
  calls.function += 1
  return { statusCode: 200, body: '[]' }
}

const serve = async (options: Partial<LocalGatewayOptions>) => {
  const server = createServer(
    createLocalGateway({
      handlers: Object.fromEntries(ROUTES.map((route) => [route.operationId, stub])) as Record<
        OperationId,
        ProxyHandler
      >,
      authorizer,
      clock: () => now,
      authorizerCacheTtlSeconds: TTL_SECONDS,
      ...options,
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { server, baseUrl: `http://127.0.0.1:${port}/v1` }
}

const close = (server: Server | undefined) =>
  new Promise<void>((resolve) => {
    if (!server) return resolve()
    server.close(() => resolve())
    server.closeAllConnections()
  })

let gateway: { server: Server; baseUrl: string }
beforeAll(async () => {
  gateway = await serve({})
})
afterAll(() => close(gateway?.server))
beforeEach(() => {
  calls.authorizer = 0
  calls.function = 0
  now += 3_600_000 // every test starts with an empty cache and full buckets
})

describe('the local gateway in front of the authorizer', () => {
  it('answers a missing or malformed Authorization header 401 without invoking the authorizer', async () => {
    const api = apiClient(gateway.baseUrl, undefined, STUB_CLIENT)
    const headers = [
      undefined,
      'Bearer short',
      'Basic dXNlcjpwYXNzd29yZDAxMjM0NTY3ODk=',
      `Bearer ${'k'.repeat(129)}`,
      `Bearer ${GOOD}=x`,
      `Bearer  `,
    ]
    for (const header of headers) {
      const response = await api.get('/pets', header ? { headers: { Authorization: header } } : {})
      expect(response.status).toBe(401)
      expect(response.json).toMatchObject({ code: 'unauthorized', status: 401 })
      expect(response.headers.get('www-authenticate')).toBe(BEARER_CHALLENGE)
    }
    expect(calls).toEqual({ authorizer: 0, function: 0 })
  })

  it('caches an allow per header value for the TTL, then asks again', async () => {
    const api = apiClient(gateway.baseUrl, GOOD, STUB_CLIENT)
    for (let i = 0; i < 3; i += 1) expect((await api.get('/pets')).status).toBe(200)
    expect(calls.authorizer).toBe(1)
    // Another spelling of the same key is another cache entry, as on AWS.
    const respelled = { key: null, headers: { Authorization: `bearer ${GOOD}` } }
    expect((await api.get('/pets', respelled)).status).toBe(200)
    expect(calls.authorizer).toBe(2)
    now += TTL_SECONDS * 1000 - 1
    await api.get('/pets')
    expect(calls.authorizer).toBe(2)
    now += 1
    await api.get('/pets')
    expect(calls.authorizer).toBe(3)
    expect(calls.function).toBe(6)
  })

  it('caches a denial too, and never caches an authorizer failure', async () => {
    const denied = apiClient(gateway.baseUrl, REVOKED, STUB_CLIENT)
    for (let i = 0; i < 2; i += 1) {
      const response = await denied.get('/pets')
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe(BEARER_CHALLENGE)
    }
    expect(calls.authorizer).toBe(1)
    const broken = apiClient(gateway.baseUrl, BROKEN, STUB_CLIENT)
    for (let i = 0; i < 2; i += 1) {
      expect((await broken.get('/pets')).json).toMatchObject({
        code: 'internal_error',
        status: 500,
      })
    }
    expect(calls).toEqual({ authorizer: 3, function: 0 })
  })

  it('refuses a key the authorizer gives no plan (INVALID_API_KEY) before the function', async () => {
    const response = await apiClient(gateway.baseUrl, NO_PLAN, STUB_CLIENT).get('/pets')
    expect(response.status).toBe(401)
    expect(response.json).toMatchObject({ code: 'unauthorized', status: 401 })
    expect(calls.function).toBe(0)
  })

  it('asks the authorizer on every request with TTL 0', async () => {
    const uncached = await serve({ authorizerCacheTtlSeconds: 0 })
    try {
      const api = apiClient(uncached.baseUrl, GOOD, STUB_CLIENT)
      for (let i = 0; i < 3; i += 1) await api.get('/pets')
      expect(calls.authorizer).toBe(3)
    } finally {
      await close(uncached.server)
    }
  })

  it('answers a backstop refusal itself: the function never runs', async () => {
    const tiny = await serve({
      backstopFor: () => ({ rateLimit: 1, burstLimit: 2, dailyQuota: 3 }),
    })
    try {
      const api = apiClient(tiny.baseUrl, GOOD, STUB_CLIENT)
      const statuses = async (count: number) => {
        const codes: (string | number)[] = []
        for (let i = 0; i < count; i += 1) {
          const response = await api.get('/pets')
          codes.push(response.status === 200 ? 200 : (response.json as { code: string }).code)
        }
        return codes
      }
      expect(await statuses(3)).toEqual([200, 200, 'rate_limited'])
      now += 1_000
      expect(await statuses(2)).toEqual([200, 'quota_exceeded'])
      expect(calls.function).toBe(3)
    } finally {
      await close(tiny.server)
    }
  })
})

/** A GET of /v1/pets from `agent`'s address: its status, and the body's code when it has one. */
const getFrom = (agent: Agent, baseUrl: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; code?: string; headers: Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request(`${baseUrl}/pets`, { agent, headers }, (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString()
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(body.startsWith('{') ? { code: (JSON.parse(body) as { code: string }).code } : {}),
            headers: res.headers,
          }),
        )
      })
      req.on('error', reject)
      req.end()
    },
  )

const wrongKey = (n: number) => ({ Authorization: `Bearer guess-${n}-0123456789abcdef` })

describe('the local edge in front of the gateway', () => {
  it('never refuses or delays a new valid key because its address sent wrong keys and requests without a key below the ceilings', async () => {
    const edged = await serve({ corsAllowOrigin: '*' })
    const agent = new Agent({ keepAlive: true, maxSockets: 64, localAddress: '127.0.0.1' })
    try {
      // The reproduction: 40 wrong keys and 40 without a key from 127.0.0.1.
      const refused = await Promise.all([
        ...Array.from({ length: 40 }, (_, n) => getFrom(agent, edged.baseUrl, wrongKey(n))),
        ...Array.from({ length: 40 }, () => getFrom(agent, edged.baseUrl)),
      ])
      expect(new Set(refused.map((answer) => answer.status))).toEqual(new Set([401]))
      expect(calls.authorizer).toBe(40)
      // A key its address never sent (a just-created key): asked, and served. Sent after one more
      // wrong key, whose 401 is held back past the 30th wrong key of the minute, it is answered
      // first.
      const order: string[] = []
      const late = getFrom(agent, edged.baseUrl, wrongKey(40)).then((answer) =>
        order.push(`wrong key ${answer.status}`),
      )
      await new Promise((resolve) => setImmediate(resolve))
      const fresh = getFrom(agent, edged.baseUrl, { Authorization: `Bearer ${GOOD}` }).then(
        (answer) => order.push(`valid key ${answer.status}`),
      )
      await Promise.all([late, fresh])
      expect(order).toEqual(['valid key 200', 'wrong key 401'])
    } finally {
      agent.destroy()
      await close(edged.server)
    }
  })

  it("refuses at the template's ceilings with the WAF's answers: requests without a key, keyed requests and preflights of an address counted apart", async () => {
    const edged = await serve({
      corsAllowOrigin: '*',
      edge: new LocalEdge({
        numbers: {
          ...localEdgeNumbers(),
          wafKeylessPer5Minutes: 3,
          wafKeyedPerAddressPerMinute: 4,
        },
        clock: () => now,
      }),
    })
    const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' })
    const preflight = () =>
      fetch(`${edged.baseUrl}/pets`, {
        method: 'OPTIONS',
        headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' },
      })
    try {
      const keyless = []
      for (let i = 0; i < 5; i += 1) keyless.push(await getFrom(agent, edged.baseUrl))
      expect(keyless.map((answer) => answer.code)).toEqual([
        'unauthorized',
        'unauthorized',
        'unauthorized',
        'too_many_failed_auths',
        'too_many_failed_auths',
      ])
      // The WAF's answer: a static Retry-After, and the stage's CORS headers (a page reads it).
      expect(keyless[3]?.headers).toMatchObject({
        'retry-after': '60',
        'access-control-allow-origin': '*',
      })
      // Keyed requests from the same address are not counted with those: the valid key is
      // served up to the keyed ceiling (with any keys, right or wrong), refused past it.
      const keyed = []
      for (let i = 0; i < 5; i += 1) {
        keyed.push(await getFrom(agent, edged.baseUrl, { Authorization: `Bearer ${GOOD}` }))
      }
      expect(keyed.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 429])
      expect(keyed[4]?.code).toBe('rate_limited')
      // Preflights are counted apart at the same ceiling (these come from 127.0.0.1).
      const preflights = []
      for (let i = 0; i < 5; i += 1) preflights.push((await preflight()).status)
      expect(preflights).toEqual([204, 204, 204, 204, 429])
    } finally {
      agent.destroy()
      await close(edged.server)
    }
  })
})

describe('a client that keeps sending past its refusals', () => {
  it('is answered on each connection only after a pause, while other addresses are answered at once', async () => {
    const limited = await serve({
      edge: new LocalEdge({
        numbers: { ...localEdgeNumbers(), wafKeylessPer5Minutes: 10 },
        clock: () => now,
      }),
    })
    const attacker = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' })
    const other = new Agent({ keepAlive: true, localAddress: '127.0.0.3' })
    const get = async (agent: Agent) => (await getFrom(agent, limited.baseUrl)).status
    try {
      // Keyless: 10 failures, then TARPIT_AFTER_REFUSALS refusals at full speed.
      for (let i = 0; i < 10 + TARPIT_AFTER_REFUSALS; i += 1) await get(attacker)
      expect(await get(attacker)).toBe(429)
      // The attacker's connection is now paused after each 429: another address, asked after
      // it, is answered first.
      const order: string[] = []
      const slowed = get(attacker).then((status) => order.push(`attacker ${status}`))
      await new Promise((resolve) => setImmediate(resolve))
      const fresh = get(other).then((status) => order.push(`other ${status}`))
      await Promise.all([slowed, fresh])
      expect(order).toEqual(['other 401', 'attacker 429'])
    } finally {
      attacker.destroy()
      other.destroy()
      await close(limited.server)
    }
  })
})
