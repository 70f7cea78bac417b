import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSmokeCommand } from '#ops/smoke-command.ts'
import { CONTROL_SECRET_VARIABLE } from '#shared/config/local-control-config.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import {
  type InProcessServer,
  runScriptToExit,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * `npm run smoke` as an operator runs it after a deploy, here against the local server (and a
 * proxy in front of it that breaks the contract): its report and exit code. Runs happen in this
 * process (runSmokeCommand, what the CLI runs), one as the real CLI process.
 */
const KEY = 'smoke-given-key-0123456789abcdef'
/** A check per operation of the route table, then "every operation" (all were called). */
const OPERATIONS = ROUTES.map((route) => route.operationId)
/** The key works, the operations, every operation, rate-limit headers, 401. */
const WITH_GIVEN_KEY = OPERATIONS.length + 4
/** Those and the temporary key: made, then revoked. */
const WITH_TEMPORARY_KEY = WITH_GIVEN_KEY + 2
let server: InProcessServer
let proxy: Server
let proxyUrl: string

/**
 * Forwards everything to the local server, but answers a create with a pet whose categoryId is a
 * string: a response the OpenAPI document does not allow.
 */
const startBreakingProxy = async (target: URL): Promise<Server> => {
  const breaking = createServer((req, res) => {
    const forward = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        // As a reverse proxy does: the control plane refuses a Host other than its own.
        headers: { ...req.headers, host: target.host },
      },
      (upstream) => {
        const chunks: Buffer[] = []
        upstream.on('data', (chunk: Buffer) => chunks.push(chunk))
        upstream.on('end', () => {
          let body = Buffer.concat(chunks)
          if (req.method === 'POST' && req.url === '/v1/pets' && upstream.statusCode === 201) {
            const pet = JSON.parse(body.toString()) as Record<string, unknown>
            body = Buffer.from(JSON.stringify({ ...pet, categoryId: String(pet.categoryId) }))
          }
          res.writeHead(upstream.statusCode ?? 502, {
            ...upstream.headers,
            'content-length': String(body.length),
          })
          res.end(body)
        })
      },
    )
    req.pipe(forward)
  })
  await new Promise<void>((resolve) => breaking.listen(0, '127.0.0.1', resolve))
  return breaking
}

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `free:${KEY}` })
  proxy = await startBreakingProxy(new URL(server.baseUrl))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`
})
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve))
  await server?.stop()
})

const smoke = async (...args: string[]) => {
  let output = ''
  const write = (text: string) => {
    output += text
  }
  const code = await runSmokeCommand(args, {
    stdout: write,
    stderr: write,
    env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
  })
  return { code, output }
}

describe.concurrent('npm run smoke', () => {
  it('passes against the local server, with a temporary key it makes and revokes (the real CLI process)', async () => {
    const result = await runScriptToExit('ops/smoke-cli.ts', ['--base-url', server.baseUrl], {
      [CONTROL_SECRET_VARIABLE]: server.controlSecret,
    })
    expect(result.code, result.output).toBe(0)
    for (const check of [
      'temporary key',
      'the key works',
      ...OPERATIONS,
      'every operation',
      'rate-limit headers',
      '401',
      'temporary key revoked',
    ]) {
      expect(result.output).toContain(`  ok    ${check}: `)
    }
    expect(result.output).toContain('policy "minute";q=60;w=60, "day";q=1000;w=86400')
    expect(result.output).toMatch(
      new RegExp(
        `passed: ${WITH_TEMPORARY_KEY} of ${WITH_TEMPORARY_KEY} checks, \\d+ answers checked against openapi/openapi\\.json`,
      ),
    )
  })

  it('passes with a given key, which it neither makes nor revokes', async () => {
    const result = await smoke('--base-url', server.baseUrl, '--key', KEY)
    expect(result.code, result.output).toBe(0)
    expect(result.output).toContain(`passed: ${WITH_GIVEN_KEY} of ${WITH_GIVEN_KEY} checks`)
    expect(result.output).not.toContain(KEY)
  })

  it('fails, naming the answer and the rule, when a response breaks the contract', async () => {
    const result = await smoke('--base-url', proxyUrl)
    expect(result.code, result.output).toBe(1)
    expect(result.output).toMatch(
      / {2}FAIL {2}createPet: broke the contract:\n\s+- createPet 201: body \/categoryId must be integer/,
    )
    // getPet answers the pet as stored, which the broken create answer no longer matches.
    expect(result.output).toContain('  FAIL  getPet: another pet came back')
    // Everything else still ran, and the temporary key is gone.
    expect(result.output).toContain('  ok    listPets: ')
    expect(result.output).toContain('  ok    temporary key revoked: ')
    expect(result.output).toContain(
      `FAILED: ${WITH_TEMPORARY_KEY - 2} of ${WITH_TEMPORARY_KEY} checks`,
    )
  })

  it('exits 2 on a usage error', async () => {
    const result = await smoke('--key', KEY)
    expect(result.code).toBe(2)
    expect(result.output).toContain('--key needs --base-url or --stage')
  })
})
