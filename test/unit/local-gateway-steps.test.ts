import { EventEmitter } from 'node:events'
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { describe, expect, it, vi } from 'vitest'
import { type Authorization, AuthorizerCache } from '#local/gateway/authorizer-cache.ts'
import { readBody } from '#local/gateway/gateway-http.ts'
import { matchRoute } from '#local/gateway/gateway-routes.ts'
import {
  authorizeRequest,
  type TokenAuthorizer,
  usagePlanVerdict,
} from '#local/gateway/local-gateway.ts'
import { gatewayHeaders, proxyEventOf } from '#local/gateway/proxy-event.ts'
import { UsagePlanThrottle } from '#local/gateway/usage-plan-throttle.ts'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'

/**
 * The local gateway's steps one at a time (test/e2e/gateway-*.test.ts drive them together over
 * HTTP): routing, the authorizer and its cache, the usage plan, the body, the proxy event.
 */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0)
const KEY = 'steps-key-0123456789abcdef'
const HEADER = `Bearer ${KEY}`
const METHOD_ARN = 'arn:aws:execute-api:local:000000000000:local/local/GET/v1/pets'

const allowResult = (effect: 'Allow' | 'Deny' = 'Allow'): APIGatewayAuthorizerResult => ({
  principalId: 'key-id',
  usageIdentifierKey: KEY,
  context: { keyId: 'key-id', plan: 'free', perMinute: '60', perDay: '1000' },
  policyDocument: {
    Version: '2012-10-17',
    Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: '*' }],
  },
})

const authorizerAnswering = (answer: () => APIGatewayAuthorizerResult) =>
  vi.fn<TokenAuthorizer>(async () => answer())

/** An authorizer that allows once `release()` is called: calls made before then are under way. */
const heldAuthorizer = () => {
  let release: () => void = () => undefined
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  const authorizer = vi.fn<TokenAuthorizer>(async () => {
    await released
    return allowResult()
  })
  return { authorizer, release }
}

const cacheFor = (ttlSeconds: number) => new AuthorizerCache({ ttlSeconds, clock: () => T0 })

const authorization = (overrides: Partial<Authorization> = {}): Authorization => ({
  allowed: true,
  principalId: 'key-id',
  context: { keyId: 'key-id', plan: 'free', perMinute: 60, perDay: 1000 },
  usageKeyDigest: 'digest-of-the-key',
  ...overrides,
})

describe('step 1: routing', () => {
  it('finds a route by method and path and decodes its path parameters', () => {
    // Act
    const match = matchRoute('GET', '/v1/pets/caf%C3%A9')

    // Assess
    expect(match).toMatchObject({
      route: { operationId: 'getPet' },
      resource: '/v1/pets/{petId}',
      pathParameters: { petId: 'café' },
    })
  })

  it('passes malformed percent-encoding to the function as written', () => {
    expect(matchRoute('GET', '/v1/pets/%zz')?.pathParameters).toEqual({ petId: '%zz' })
  })

  it('gives a route without parameters null path parameters, as API Gateway does', () => {
    expect(matchRoute('POST', '/v1/pets')).toMatchObject({
      route: { operationId: 'createPet' },
      pathParameters: null,
    })
  })

  it.each([
    ['an unknown method', 'DELETE', '/v1/pets'],
    ['a trailing slash', 'GET', '/v1/pets/'],
    ['another version', 'GET', '/v2/pets'],
    ['a nested path', 'GET', '/v1/pets/1/extra'],
  ])('matches nothing for %s', (_label, method, path) => {
    expect(matchRoute(method, path)).toBeUndefined()
  })
})

describe('step 2: the authorizer', () => {
  it('refuses a header that fails the token validation pattern without invoking the authorizer', async () => {
    // Prepare
    const authorizer = authorizerAnswering(allowResult)

    // Act
    const outcome = await authorizeRequest({
      header: `Basic ${KEY}`,
      methodArn: METHOD_ARN,
      authorizer,
      cache: cacheFor(60),
    })

    // Assess
    expect(outcome).toEqual({ outcome: 'refused', response: 'UNAUTHORIZED' })
    expect(authorizer).not.toHaveBeenCalled()
  })

  it('allows with the authorizer’s principal and context, the key kept as a digest only', async () => {
    // Act
    const outcome = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer: authorizerAnswering(allowResult),
      cache: cacheFor(0),
    })

    // Assess
    expect(outcome).toMatchObject({
      outcome: 'allowed',
      authorization: { allowed: true, principalId: 'key-id', usageKeyDigest: expect.any(String) },
    })
    expect(JSON.stringify(outcome)).not.toContain(KEY)
  })

  it('asks the authorizer with the token and the method ARN, then answers from the cache', async () => {
    // Prepare
    const authorizer = authorizerAnswering(allowResult)
    const cache = cacheFor(60)

    // Act
    await authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache })
    const second = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer,
      cache,
    })

    // Assess
    expect(authorizer).toHaveBeenCalledTimes(1)
    expect(authorizer.mock.calls[0]?.[0]).toEqual({
      type: 'TOKEN',
      authorizationToken: HEADER,
      methodArn: METHOD_ARN,
    })
    expect(second.outcome).toBe('allowed')
  })

  it('refuses an "Unauthorized" key with 401 and caches the denial', async () => {
    // Prepare
    const authorizer = vi.fn<TokenAuthorizer>(async () => {
      throw new Error(UNAUTHORIZED)
    })
    const cache = cacheFor(60)

    // Act
    const first = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer,
      cache,
    })
    const second = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer,
      cache,
    })

    // Assess
    expect([first, second]).toEqual([
      { outcome: 'refused', response: 'UNAUTHORIZED' },
      { outcome: 'refused', response: 'UNAUTHORIZED' },
    ])
    expect(authorizer).toHaveBeenCalledTimes(1)
  })

  it('lets requests that miss the cache together share one authorizer call', async () => {
    // Prepare: the authorizer answers only once all ten asked
    const { authorizer, release } = heldAuthorizer()
    const cache = cacheFor(60)

    // Act
    const outcomes = Array.from({ length: 10 }, () =>
      authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache }),
    )
    release()

    // Assess
    for (const outcome of await Promise.all(outcomes)) expect(outcome.outcome).toBe('allowed')
    expect(authorizer).toHaveBeenCalledTimes(1)
  })

  it('with the cache off, invokes the authorizer for every request, together or not', async () => {
    const authorizer = authorizerAnswering(allowResult)
    const cache = cacheFor(0)
    await Promise.all(
      Array.from({ length: 3 }, () =>
        authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache }),
      ),
    )
    expect(authorizer).toHaveBeenCalledTimes(3)
  })

  it('does not cache an answer that was under way when the cache was flushed', async () => {
    // Prepare
    const { authorizer, release } = heldAuthorizer()
    const cache = cacheFor(60)

    // Act: a key change flushes the cache while the first call is under way
    const first = authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache })
    cache.clear()
    release()
    await first
    await authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache })

    // Assess: the request after the flush asked again
    expect(authorizer).toHaveBeenCalledTimes(2)
  })

  it('refuses a Deny policy with ACCESS_DENIED', async () => {
    const outcome = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer: authorizerAnswering(() => allowResult('Deny')),
      cache: cacheFor(0),
    })
    expect(outcome).toEqual({ outcome: 'refused', response: 'ACCESS_DENIED' })
  })

  it('reports an authorizer failure and caches nothing, so the next request asks again', async () => {
    // Prepare
    const failure = new Error('DynamoDB unreachable')
    const authorizer = vi.fn<TokenAuthorizer>(async () => {
      throw failure
    })
    const cache = cacheFor(60)

    // Act
    const outcome = await authorizeRequest({
      header: HEADER,
      methodArn: METHOD_ARN,
      authorizer,
      cache,
    })
    await authorizeRequest({ header: HEADER, methodArn: METHOD_ARN, authorizer, cache })

    // Assess
    expect(outcome).toEqual({ outcome: 'failed', error: failure })
    expect(authorizer).toHaveBeenCalledTimes(2)
  })
})

describe('step 3: the usage plan', () => {
  const throttle = () => new UsagePlanThrottle({ clock: () => T0 })

  it('admits a key with a plan, its limits read from the context even as strings', () => {
    const context = { keyId: 'key-id', plan: 'free', perMinute: '60', perDay: '1000' }
    expect(usagePlanVerdict(authorization({ context }), throttle())).toBe('admitted')
  })

  it.each([
    ['no usage key', authorization({ usageKeyDigest: undefined })],
    ['no limits in the context', authorization({ context: { keyId: 'key-id' } })],
    ['a zero limit', authorization({ context: { perMinute: 0, perDay: 1000 } })],
  ])('answers INVALID_API_KEY for %s', (_label, authorized) => {
    expect(usagePlanVerdict(authorized, throttle())).toBe('INVALID_API_KEY')
  })

  it('answers INVALID_API_KEY for a key on no usage plan of the stage, whatever the mirror says', () => {
    // The key sync holds a lost plan's keys in the mirror; API Gateway refuses them all the same.
    const context = { keyId: 'held-key', plan: 'pro', perMinute: 300, perDay: 10_000 }
    const usagePlanOf = (digest: string) => (digest === 'held-digest' ? undefined : 'backstop')
    const held = authorization({ context, usageKeyDigest: 'held-digest' })
    expect(usagePlanVerdict(held, throttle(), usagePlanOf)).toBe('INVALID_API_KEY')
    const other = authorization({ context, usageKeyDigest: 'other-digest' })
    expect(usagePlanVerdict(other, throttle(), usagePlanOf)).toBe('admitted')
  })

  it('meters keys under an unthrottled plan (the pool plan of store keys) without refusing any', () => {
    // Two store keys share the pool key: however much one sends, the other is never refused.
    const plans = throttle()
    const pooled = (keyId: string) =>
      authorization({
        context: { keyId, plan: 'free', perMinute: 60, perDay: 1000 },
        usageKeyDigest: 'pool',
      })
    const flood = Array.from({ length: 5_000 }, () =>
      usagePlanVerdict(pooled('s-flooder000'), plans, () => 'unthrottled'),
    )
    expect(flood.every((verdict) => verdict === 'admitted')).toBe(true)
    expect(usagePlanVerdict(pooled('s-quiet00000'), plans, () => 'unthrottled')).toBe('admitted')
    // The same flood on one bucket sized as a Free key's backstop would have refused the other.
    const shared = throttle()
    for (let i = 0; i < 5_000; i += 1) usagePlanVerdict(pooled('s-flooder000'), shared)
    expect(usagePlanVerdict(pooled('s-quiet00000'), shared)).toBe('THROTTLED')
  })

  it('passes on the backstop’s refusal once the key’s bucket is empty', () => {
    // Prepare: a Free key's bucket holds two minutes' requests (120).
    const plans = throttle()
    const verdicts = Array.from({ length: 121 }, () => usagePlanVerdict(authorization(), plans))

    // Assess
    expect(verdicts.at(-1)).toBe('THROTTLED')
    expect(verdicts.filter((verdict) => verdict === 'admitted')).toHaveLength(120)
  })
})

describe('step 4: the body', () => {
  const stream = () =>
    Object.assign(new EventEmitter(), { complete: false }) as EventEmitter & { complete: boolean }

  it('returns the chunks as one buffer', async () => {
    // Prepare
    const req = stream()
    const body = readBody(req)

    // Act
    req.emit('data', Buffer.from('{"name":'))
    req.emit('data', Buffer.from('"Rex"}'))
    req.complete = true
    req.emit('end')

    // Assess
    expect((await body)?.toString('utf8')).toBe('{"name":"Rex"}')
  })

  it('returns nothing past 10 MB (413), without keeping the rest', async () => {
    // Prepare
    const req = stream()
    const body = readBody(req)

    // Act
    req.emit('data', Buffer.alloc(10 * 1024 * 1024))
    req.emit('data', Buffer.alloc(1))
    req.complete = true
    req.emit('end')

    // Assess
    expect(await body).toBeUndefined()
  })

  it('fails when the connection goes away mid-body', async () => {
    // Prepare
    const req = stream()
    const body = readBody(req)

    // Act
    req.emit('data', Buffer.from('{"na'))
    req.emit('close')

    // Assess
    await expect(body).rejects.toThrow('request body incomplete')
  })
})

describe('step 5: the proxy event', () => {
  const parts = (target: string, rawHeaders: string[] = []) => {
    const url = new URL(target, 'http://local')
    const match = matchRoute('GET', url.pathname)
    if (!match) throw new Error(`no route for ${target}`)
    return {
      method: 'GET',
      url,
      match,
      headers: gatewayHeaders(
        rawHeaders,
        { remoteAddress: '10.0.0.7', localAddress: '127.0.0.1', localPort: 3000 },
        '127.0.0.1:3000',
      ),
      body: Buffer.alloc(0),
      authorization: authorization(),
      requestId: 'request-1',
      stage: 'local',
      requestTimeEpoch: T0,
      client: { sourceIp: '10.0.0.7', userAgent: 'curl/8', httpVersion: '1.1' },
    }
  }

  it('carries the route, the path parameters, the authorizer context and the request id', () => {
    // Act
    const event = proxyEventOf(parts('/v1/pets/42'))

    // Assess
    expect(event).toMatchObject({
      resource: '/v1/pets/{petId}',
      path: '/v1/pets/42',
      httpMethod: 'GET',
      pathParameters: { petId: '42' },
      queryStringParameters: null,
      body: null,
      requestContext: {
        authorizer: { keyId: 'key-id', plan: 'free', principalId: 'key-id' },
        identity: { sourceIp: '10.0.0.7', userAgent: 'curl/8' },
        requestId: 'request-1',
        requestTimeEpoch: T0,
        resourceId: 'getPet',
        stage: 'local',
      },
    })
  })

  it('keeps every value of a repeated query parameter, the last one in the single map', () => {
    // Act
    const event = proxyEventOf(parts('/v1/pets?status=sold&status=available&limit=2'))

    // Assess
    expect(event.queryStringParameters).toEqual({ status: 'available', limit: '2' })
    expect(event.multiValueQueryStringParameters).toEqual({
      status: ['sold', 'available'],
      limit: ['2'],
    })
  })

  it('takes prototype names in the query and headers as data', () => {
    // Act
    const event = proxyEventOf(parts('/v1/pets?__proto__=x', ['__proto__', 'y']))

    // Assess
    expect(Object.keys(event.queryStringParameters ?? {})).toEqual(['__proto__'])
    expect(Object.getPrototypeOf(event.queryStringParameters)).toBe(Object.prototype)
    expect(Object.keys(event.headers)).toContain('__proto__')
  })

  it('replaces the client’s Host and X-Forwarded-* with the gateway’s own', () => {
    // Act
    const event = proxyEventOf(
      parts('/v1/pets', [
        'Host',
        'evil.example',
        'X-Forwarded-Host',
        'evil.example',
        'Accept',
        '*/*',
      ]),
    )

    // Assess
    expect(event.headers).toEqual({
      Accept: '*/*',
      Host: '127.0.0.1:3000',
      'X-Forwarded-For': '10.0.0.7',
      'X-Forwarded-Port': '3000',
      'X-Forwarded-Proto': 'http',
    })
  })
})
