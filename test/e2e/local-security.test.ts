import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import {
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  GetUsagePlansCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertKeepsContract } from '#openapi/contract-validator.ts'
import {
  type InProcessServer,
  managementClient,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { rawExchange } from '#test/support/raw-http.ts'

/**
 * What the local server does with requests that try to steer it: links from the configured
 * base only, no body read before routing and authentication, failed authentications limited per
 * address without ever refusing a valid key below the edge's ceilings, oversized headers answered
 * with an Error body.
 */
const KEY = 'e2e-enterprise-security-0123456'

let server: InProcessServer
let base: URL

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY}` })
  base = new URL(server.baseUrl)
})
afterAll(async () => {
  await server?.stop()
})

interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** node:http, because fetch will not send a Host header of the caller's choosing. */
const send = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
  localAddress?: string,
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path: `/v1${path}`,
        headers,
        ...(localAddress ? { localAddress } : {}),
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => {
          // Answers of the gateway and the functions keep the contract here too (not the
          // 400s Node gives oversized headers before any route is known).
          if (res.headers['x-amzn-requestid']) {
            const received = new Headers()
            for (const [name, value] of Object.entries(res.headers)) {
              if (value !== undefined) received.set(name, [value].flat().join(', '))
            }
            assertKeepsContract({
              method,
              url: `${server.baseUrl}${path}`,
              status: res.statusCode ?? 0,
              headers: received,
              text,
            })
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })

/** A raw connection that sends headers promising a large body, then only a little of it. */
const halfSentRequest = (path: string, headers: string[]): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(base.port), base.hostname)
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      received += chunk
      if (received.includes('\r\n\r\n') && received.trimEnd().endsWith('}')) {
        socket.destroy()
        resolve(received)
      }
    })
    socket.on('error', reject)
    socket.write(
      [
        `POST /v1${path} HTTP/1.1`,
        `Host: ${base.host}`,
        'Content-Type: application/json',
        'Content-Length: 1000000',
        ...headers,
        '',
        '{"name":"half',
      ].join('\r\n'),
    )
  })

describe('links come from the configured base address', () => {
  it('ignores Host and X-Forwarded-* sent by the client for Location', async () => {
    const created = await send(
      'POST',
      '/pets',
      {
        Host: 'evil.example',
        'X-Forwarded-Host': 'evil.example',
        'X-Forwarded-Proto': 'https',
        Authorization: `Bearer ${KEY}`,
        'Content-Type': 'application/json',
      },
      JSON.stringify({ name: 'Rex', categoryId: 1, status: 'sold' }),
    )
    expect(created.status).toBe(201)
    expect(created.headers.location).toMatch(new RegExp(`^${server.baseUrl}/pets/\\d+$`))
  })

  it('ignores them for the next-page Link and the successor Link too', async () => {
    const headers = { Host: 'evil.example:666', Authorization: `Bearer ${KEY}` }
    for (let i = 0; i < 2; i += 1) {
      await send(
        'POST',
        '/pets',
        { ...headers, 'Content-Type': 'application/json' },
        JSON.stringify({ name: `Page ${i}`, categoryId: i, status: 'pending' }),
      )
    }
    const page = await send('GET', '/pets?status=pending&limit=1', headers)
    expect(page.headers.link).toContain(`<${server.baseUrl}/pets?`)
    const pet = await send('GET', '/pets/1', headers)
    expect(pet.headers.link).toBe(`<${server.baseUrl}/pets>; rel="successor-version"`)
  })
})

describe('the body is read only after routing and authentication', () => {
  it('answers 401 without waiting for a body that never comes', async () => {
    const answer = await halfSentRequest('/pets', [])
    expect(answer).toMatch(/^HTTP\/1\.1 401/)
    expect(answer).toContain('"code":"unauthorized"')
  })

  it('answers 404 for an unknown route without reading the body', async () => {
    const answer = await halfSentRequest('/store/orders', [`Authorization: Bearer ${KEY}`])
    expect(answer).toMatch(/^HTTP\/1\.1 404/)
    expect(answer).toContain('"code":"route_not_found"')
  })
})

describe('a client that waits for 100 Continue is asked for its body only once it may send it', () => {
  const body = JSON.stringify({ name: 'Expecting', categoryId: 7 })
  const head = (authorization: string) =>
    [
      'POST /v1/pets HTTP/1.1',
      `Host: ${base.host}`,
      ...(authorization ? [`Authorization: ${authorization}`] : []),
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Expect: 100-continue',
      '',
      '',
    ].join('\r\n')

  it('without a valid key: 401 and never a 100 Continue, so the body is never sent', async () => {
    for (const authorization of ['', 'Bearer wrong-key-0123456789abcdef']) {
      const answer = await rawExchange(base, head(authorization))
      expect(answer.status).toBe(401)
      expect(answer.text).not.toContain('100 Continue')
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'unauthorized', status: 401 })
    }
  })

  it('with a valid key: 100 Continue, then the body, then 201', async () => {
    const answer = await rawExchange(base, head(`Bearer ${KEY}`), { afterFirstAnswer: body })
    expect(answer.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n/)
    expect(answer.status).toBe(201)
    expect(JSON.parse(answer.body)).toMatchObject({ name: 'Expecting', categoryId: 7 })
  })
})

describe('headers over API Gateway limit', () => {
  it('get 400 with an Error body, not a bare status line', async () => {
    const answer = await send('GET', '/pets', {
      Authorization: `Bearer ${KEY}`,
      'X-Padding': 'x'.repeat(11_000),
    })
    expect(answer.status).toBe(400)
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'validation_failed', status: 400 })
    // The server still answers afterwards.
    expect((await send('GET', '/pets', { Authorization: `Bearer ${KEY}` })).status).toBe(200)
  })
})

describe('a valid key and the other requests of its address', () => {
  it('serves a just-created Business key after 40 wrong keys and 40 without a key from 127.0.0.1', async () => {
    const from = (headers: Record<string, string>) =>
      send('GET', '/pets', headers, undefined, '127.0.0.1')
    const refused = await Promise.all([
      ...Array.from({ length: 40 }, (_, n) =>
        from({ Authorization: `Bearer guess-${n}-0123456789abcdef` }),
      ),
      ...Array.from({ length: 40 }, () => from({})),
    ])
    expect(new Set(refused.map((answer) => answer.status))).toEqual(new Set([401]))
    // A Business key made now, through the management API, once the key sync has it.
    const client = managementClient(server)
    try {
      const { items = [] } = await client.send(new GetUsagePlansCommand({}))
      const business = items.find((plan) => plan.name === 'petstore-local-business')?.id
      const key = await client.send(new CreateApiKeyCommand({ name: 'new', enabled: true }))
      await client.send(
        new CreateUsagePlanKeyCommand({ usagePlanId: business, keyId: key.id, keyType: 'API_KEY' }),
      )
      await server.keySyncSettled()
      const answer = await from({ Authorization: `Bearer ${key.value}` })
      expect(answer.status).toBe(200)
      expect(answer.headers['ratelimit-policy']).toBe(
        '"minute";q=1000;w=60, "day";q=100000;w=86400',
      )
    } finally {
      client.destroy()
    }
  })

  it('are never counted with it: a flood of requests without a key, malformed and wrong keys from its address leaves it served', async () => {
    const attacker = '127.0.0.2'
    const from = (headers: Record<string, string>) =>
      send('GET', '/pets', headers, undefined, attacker)
    for (let n = 0; n < 20; n += 1) {
      const flood = await Promise.all([
        from({}),
        from({ Authorization: 'Basic Zm9vOmJhcg==' }),
        from({ Authorization: `Bearer guess-${100 + n}-0123456789abcdef` }),
        from({ Authorization: `Bearer ${KEY}` }),
      ])
      expect(flood.map((answer) => answer.status)).toEqual([401, 401, 401, 200])
    }
  })
})
