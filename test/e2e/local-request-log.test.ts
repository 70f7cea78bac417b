import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalConfigError, readLocalConfig } from '#local/local-config.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * `npm start`'s terminal: one line per request, which the answer's x-amzn-RequestId matches,
 * with the key's id and never its value; and a second server on the same data directory stops
 * with a message naming the first, instead of failing every request.
 */
describe('the local server terminal', () => {
  let dataDir: string
  let server: InProcessServer
  const lines: string[] = []

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'petstore-log-'))
    server = await startInProcessServer(
      { PETSTORE_DATA_DIR: dataDir },
      { requestLog: (line) => lines.push(line) },
    )
  })

  afterAll(async () => {
    await server?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const key = () => server.keys.created.find((entry) => entry.plan === 'free')?.key as string

  it('writes one line per request: time, method, path, status, duration, request id, key id', async () => {
    const before = lines.length
    const response = await fetch(`${server.baseUrl}/pets?limit=1`, {
      headers: { Authorization: `Bearer ${key()}` },
    })
    await response.arrayBuffer()
    const requestId = response.headers.get('x-amzn-RequestId')
    expect(lines.slice(before)).toHaveLength(1)
    const line = lines.at(-1) as string
    expect(line).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z GET \/v1\/pets 200 \d+ms id=\S+ key=[a-z0-9]+$/,
    )
    expect(line).toContain(`id=${requestId}`)
    expect(line).not.toContain('limit=1')
    expect(line).not.toContain(key())
  })

  it('names no key before authentication, and masks a key typed into the path', async () => {
    const refused = await fetch(`${server.baseUrl}/pets/${key()}`)
    await refused.arrayBuffer()
    expect(refused.status).toBe(401)
    const line = lines.at(-1) as string
    expect(line).toMatch(
      / GET \/v1\/pets\/<not shown: shaped like a key value> 401 \d+ms id=\S+ key=-$/,
    )
    expect(lines.join('\n')).not.toContain(key())
  })

  it('answers headers over 10,240 bytes with 400, a request id, and a line naming it', async () => {
    const before = lines.length
    const response = await fetch(`${server.baseUrl}/pets?limit=1`, {
      headers: { Authorization: `Bearer ${key()}`, 'X-Padding': 'x'.repeat(11_000) },
    })
    const body = (await response.json()) as Record<string, unknown>
    const requestId = response.headers.get('x-amzn-RequestId')
    expect(response.status).toBe(400)
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(body).toMatchObject({ code: 'validation_failed', status: 400, requestId })
    expect(lines.slice(before)).toHaveLength(1)
    expect(lines.at(-1)).toMatch(new RegExp(` GET /v1/pets 400 0ms id=${requestId} key=-$`))
    expect(lines.join('\n')).not.toContain(key())
  })

  it('stops a second server on the same data directory, naming the first', async () => {
    await expect(startInProcessServer({ PETSTORE_DATA_DIR: dataDir })).rejects.toThrow(
      `is in use by the server at ${server.baseUrl}`,
    )
    // The first one still answers.
    const response = await fetch(`${server.baseUrl}/pets`, {
      headers: { Authorization: `Bearer ${key()}` },
    })
    expect(response.status).toBe(200)
  })

  it('refuses a CORS origin that is not one origin', () => {
    for (const origin of ['https://a.example,https://b.example', 'https://a.example/app']) {
      expect(() => readLocalConfig({ PETSTORE_CORS_ORIGIN: origin })).toThrow(LocalConfigError)
    }
    expect(readLocalConfig({}).corsAllowOrigin).toBe('*')
  })
})
