import { Agent, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { TARPIT_AFTER_REFUSALS } from '#local/gateway/failed-auth-limiter.ts'
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

describe('an address refused per address', () => {
  it('costs no authorizer run once refused for wrong keys, and still serves a key proven within the TTL', async () => {
    const limited = await serve({ failedAuthLimit: 3, corsAllowOrigin: '*' })
    try {
      const good = apiClient(limited.baseUrl, GOOD, STUB_CLIENT)
      expect((await good.get('/pets')).status).toBe(200)
      const guess = (n: number) =>
        apiClient(limited.baseUrl, `guess-${n}-0123456789abcdef`, STUB_CLIENT).get('/pets')
      for (let n = 0; n < 4; n += 1) expect((await guess(n)).status).toBe(401)
      expect(calls.authorizer).toBe(5)
      // Refused: 250 more guesses run the authorizer (and read the key mirror) zero times.
      for (let n = 4; n < 254; n += 1) {
        const refused = await guess(n)
        expect(refused.status).toBe(429)
        expect(refused.json).toMatchObject({ code: 'too_many_failed_auths' })
      }
      expect(calls.authorizer).toBe(5)
      // The key it already proved is answered from the cache; a preflight is never refused.
      expect((await good.get('/pets')).status).toBe(200)
      const preflight = await fetch(`${limited.baseUrl}/pets`, {
        method: 'OPTIONS',
        headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' },
      })
      expect(preflight.status).toBe(204)
      expect(calls.authorizer).toBe(5)
    } finally {
      await close(limited.server)
    }
  })

  it('counts keyless requests apart: a keyless flood never refuses a key or a preflight', async () => {
    const limited = await serve({ failedAuthLimit: 3, corsAllowOrigin: '*' })
    try {
      const keyless = apiClient(limited.baseUrl, undefined, STUB_CLIENT)
      const statuses: number[] = []
      for (let i = 0; i < 10; i += 1) statuses.push((await keyless.get('/pets')).status)
      expect(statuses).toEqual([401, 401, 401, 401, 429, 429, 429, 429, 429, 429])
      const preflight = await fetch(`${limited.baseUrl}/pets`, {
        method: 'OPTIONS',
        headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET' },
      })
      expect(preflight.status).toBe(204)
      // A key first seen now, from the flooding address: asked, and served.
      expect((await apiClient(limited.baseUrl, GOOD, STUB_CLIENT).get('/pets')).status).toBe(200)
      expect(calls.authorizer).toBe(1)
    } finally {
      await close(limited.server)
    }
  })
})

describe('a client that keeps sending past its refusals', () => {
  it('is answered on each connection only after a pause, while other addresses are answered at once', async () => {
    const limited = await serve({ failedAuthLimit: 1 })
    const attacker = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' })
    const other = new Agent({ keepAlive: true, localAddress: '127.0.0.3' })
    const get = (agent: Agent) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${limited.baseUrl}/pets`, { agent }, (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        })
        req.on('error', reject)
        req.end()
      })
    try {
      // Keyless: 2 failures, then TARPIT_AFTER_REFUSALS refusals at full speed.
      for (let i = 0; i < 2 + TARPIT_AFTER_REFUSALS; i += 1) await get(attacker)
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
