import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalConfigError, readLocalConfig } from '#local/local-config.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import { rawExchange } from '#test/support/raw-http.ts'

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

  /**
   * Request targets Node refuses (400, local/gateway/client-error.ts), with a byte sequence of each
   * class a terminal acts on: C0 and DEL (ESC: CSI, OSC 52), C1 (0x9B is a one-byte CSI), and the
   * UTF-8 of the bidi controls and of U+2028/U+2029.
   */
  const HOSTILE_TARGETS: [name: string, bytes: number[], shown: string][] = [
    ['ESC CSI (erase the line)', [0x1b, 0x5b, 0x32, 0x4b], '\\x1b[2K'],
    [
      'OSC 52 (set the clipboard)',
      [0x1b, 0x5d, 0x35, 0x32, 0x3b, 0x63, 0x3b, 0x07],
      '\\x1b]52;c;\\x07',
    ],
    ['NUL', [0x00], '\\x00'],
    ['BS (overwrite what was written)', [0x08, 0x08, 0x32], '\\x08\\x082'],
    ['DEL', [0x7f], '\\x7f'],
    ['C1 CSI, one byte', [0x9b, 0x32, 0x4a], '\\x9b2J'],
    ['C1 CSI, as UTF-8', [0xc2, 0x9b, 0x32, 0x4a], '\\xc2\\x9b2J'],
    ['C1 OSC and ST', [0x9d, 0x30, 0x3b, 0x9c], '\\x9d0;\\x9c'],
    ['U+202E RIGHT-TO-LEFT OVERRIDE', [0xe2, 0x80, 0xae], '\\xe2\\x80\\xae'],
    ['U+202A LEFT-TO-RIGHT EMBEDDING', [0xe2, 0x80, 0xaa], '\\xe2\\x80\\xaa'],
    ['U+2066 LEFT-TO-RIGHT ISOLATE', [0xe2, 0x81, 0xa6], '\\xe2\\x81\\xa6'],
    ['U+2069 POP DIRECTIONAL ISOLATE', [0xe2, 0x81, 0xa9], '\\xe2\\x81\\xa9'],
    ['U+2028 LINE SEPARATOR', [0xe2, 0x80, 0xa8], '\\xe2\\x80\\xa8'],
    ['U+2029 PARAGRAPH SEPARATOR', [0xe2, 0x80, 0xa9], '\\xe2\\x80\\xa9'],
  ]

  it.each(HOSTILE_TARGETS)(
    'logs a refused request target holding %s escaped, in printable ASCII',
    async (_name, bytes, shown) => {
      const before = lines.length
      const answer = await rawExchange(
        new URL(server.baseUrl),
        Buffer.concat([
          Buffer.from('GET /v1/pets/a'),
          Buffer.from(bytes),
          Buffer.from('b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
        ]),
      )
      expect(answer.status).toBe(400)
      expect(lines.slice(before)).toHaveLength(1)
      const line = lines.at(-1) as string
      expect(line).toMatch(/^[\x20-\x7e]*$/)
      expect(line).toContain(
        ` GET /v1/pets/a${shown}b 400 0ms id=${answer.headers['x-amzn-requestid']} key=-`,
      )
    },
  )

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
