import { mkdtemp, rm, stat } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_HEADER } from '#keys/local-control-config.ts'
import {
  type InProcessServer,
  runScriptToExit,
  startInProcessServer,
  startLocalServer,
} from '#test/support/local-server.ts'

/**
 * The local control plane answers the project's own tools only: a DNS-rebinding page (a foreign
 * Host), a cross-site page (Origin, Sec-Fetch-Site, a text/plain POST) and a forwarded port (no
 * secret) get nothing; the API under /v1 is not affected; and `npm run keys` finds the secret in
 * the data directory by itself, as before.
 */
const KEY = 'e2e-enterprise-guard-0123456789'

let server: InProcessServer
let port: number

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY}` })
  port = Number(new URL(server.baseUrl).port)
})
afterAll(async () => {
  await server?.stop()
})

interface Answer {
  status: number
  body: string
  json: Record<string, unknown>
}

/** node:http, because fetch will not send a Host header of the caller's choosing. */
const send = (
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          host: `127.0.0.1:${port}`,
          ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString()
          let json: Record<string, unknown> = {}
          try {
            json = JSON.parse(text) as Record<string, unknown>
          } catch {
            // Not JSON: the assertions on status and body say what came.
          }
          resolve({ status: res.statusCode ?? 0, body: text, json })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })

const withSecret = () => ({ [CONTROL_SECRET_HEADER]: server.controlSecret })
const LIST_WITH_VALUES = '/_local/apigateway/apikeys?includeValues=true'

const keyCount = async () => {
  const answer = await send('GET', '/_local/apigateway/apikeys?limit=500', withSecret())
  expect(answer.status).toBe(200)
  return (answer.json.item as unknown[]).length
}

describe('the local control plane refuses', () => {
  it('answers its own tools: loopback Host with the port served, the secret, no browser headers', async () => {
    const answer = await send('GET', LIST_WITH_VALUES, withSecret())
    expect(answer.status).toBe(200)
    expect(answer.body).toContain(KEY)
  })

  it.each([
    ['a DNS-rebinding page (foreign Host)', { host: 'attacker.example:3000' }],
    ['a foreign Host without a port', { host: 'attacker.example' }],
    ['a loopback Host for another port', { host: '127.0.0.1:1' }],
    ['a cross-origin request (Origin)', { origin: 'http://attacker.example' }],
    ['a cross-site fetch (Sec-Fetch-Site)', { 'sec-fetch-site': 'cross-site' }],
    ['another port of localhost (same-site)', { 'sec-fetch-site': 'same-site' }],
  ])('%s, with 403 and no key', async (_, headers) => {
    const answer = await send('GET', LIST_WITH_VALUES, { ...withSecret(), ...headers })
    expect(answer.status).toBe(403)
    expect(answer.json).toMatchObject({ code: 'AccessDeniedException', status: 403 })
    expect(answer.json.message).toEqual(expect.any(String))
    expect(answer.body).not.toContain(KEY)
  })

  it('a request without the secret (a forwarded port arrives from loopback too), on every key path', async () => {
    for (const [method, path] of [
      ['GET', LIST_WITH_VALUES],
      ['GET', '/_local/apigateway/usageplans'],
      ['POST', '/_local/key-sync'],
      ['GET', '/_local/key-mirror/0123456789abcdef'],
    ] as const) {
      const attempts: Record<string, string>[] = [
        {},
        { [CONTROL_SECRET_HEADER]: 'a-wrong-secret-0123456789abcdef0123' },
      ]
      for (const headers of attempts) {
        const answer = await send(method, path, headers)
        expect(answer.status, `${method} ${path}`).toBe(401)
        expect(answer.json).toMatchObject({ code: 'UnauthorizedException', status: 401 })
        expect(answer.json.message).toContain('control-plane-secret')
        expect(answer.body).not.toContain(KEY)
        expect(answer.body).not.toContain(server.controlSecret)
      }
    }
  })

  it('a body that is not application/json (a cross-site text/plain POST needs no preflight)', async () => {
    const before = await keyCount()
    const planted = JSON.stringify({
      name: 'planted',
      enabled: true,
      value: 'planted-by-a-page-0123456789',
    })
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const answer = await send(
        'POST',
        '/_local/apigateway/apikeys',
        { ...withSecret(), 'content-type': type },
        planted,
      )
      expect(answer.status, type).toBe(415)
      expect(answer.json).toMatchObject({ code: 'UnsupportedMediaTypeException', status: 415 })
    }
    expect(await keyCount()).toBe(before)
  })
})

describe('what stays open', () => {
  it('the public API under /v1, whatever Host or Origin it is sent with', async () => {
    const answer = await send('GET', '/v1/pets?limit=1', {
      authorization: `Bearer ${KEY}`,
      host: `attacker.example:${port}`,
      origin: 'http://attacker.example',
    })
    expect(answer.status).toBe(200)
  })

  it("GET /_local/outputs without the secret: the stage's ids, no key", async () => {
    const answer = await send('GET', '/_local/outputs')
    expect(answer.status).toBe(200)
    expect(answer.json.BaseUrl).toBe(server.baseUrl)
    expect(answer.body).not.toContain(KEY)
  })
})

describe('npm start and npm run keys on one data directory', () => {
  let dataDir: string
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  it('keep working unchanged: the CLI reads the secret the server made, owner-only, where the banner says', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'petstore-guard-'))
    const started = await startLocalServer({ PETSTORE_DATA_DIR: dataDir, PETSTORE_API_KEYS: '' })
    try {
      const secretFile = join(dataDir, 'control-plane-secret')
      expect(started.output()).toContain(
        `Control plane secret (npm run keys reads it): ${secretFile}`,
      )
      expect((await stat(secretFile)).mode & 0o777).toBe(0o600)
      const origin = new URL(started.baseUrl).origin
      const created = await runScriptToExit(
        'ops/keys/keys-cli.ts',
        ['--url', origin, 'create', '--plan', 'free'],
        {
          PETSTORE_DATA_DIR: dataDir,
        },
      )
      expect(created.code, created.output).toBe(0)
      const key = created.stdout.trim()
      const pets = await fetch(`${started.baseUrl}/pets?limit=1`, {
        headers: { authorization: `Bearer ${key}` },
      })
      expect(pets.status).toBe(200)

      // Another data directory holds another secret (none here): refused, saying where to look.
      const elsewhere = await runScriptToExit('ops/keys/keys-cli.ts', ['--url', origin, 'list'], {
        PETSTORE_DATA_DIR: join(dataDir, 'elsewhere'),
      })
      expect(elsewhere.code).toBe(1)
      expect(elsewhere.output).toContain('control-plane-secret')
    } finally {
      await started.stop()
    }
  })
})
