import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_HEADER, CONTROL_SECRET_VARIABLE } from '#keys/local-control-config.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { runSmokeCommand } from '#ops/smoke/smoke-command.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * No message of the keys CLI, the smoke test or the local control plane repeats a key value,
 * whoever wrote the message: a value typed where an id, a name, an option or a command belongs
 * goes through every error path (usage errors, not found, refused calls, a server that echoes
 * what it was sent) and is found in no output. The one line that hands a new key out is the
 * only place a value appears.
 */
let server: InProcessServer
let origin: string
/** A working key's value and id, made with the CLI. */
let value: string
let id: string
/** Answers every control-plane call 403 and every API call 500, repeating the whole request. */
let echoing: Server
let echoingOrigin: string

const run = async (runner: typeof runKeysCommand | typeof runSmokeCommand, argv: string[]) => {
  let output = ''
  const write = (text: string) => {
    output += text
  }
  const code = await runner(argv, {
    stdout: write,
    stderr: write,
    env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
  })
  return { code, output }
}

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: '' })
  origin = new URL(server.baseUrl).origin
  let stdout = ''
  let stderr = ''
  const code = await runKeysCommand(['--url', origin, 'create', '--plan', 'free'], {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
  })
  expect(code, stderr).toBe(0)
  value = stdout.trim()
  id = /created key (\w+)/.exec(stderr)?.[1] as string
  // Forwards what the CLIs need to find the server, and repeats every request it refuses.
  echoing = createServer((req, res) => {
    const said = `${req.method} ${req.url} ${req.headers.authorization ?? ''}`
    if (req.url === '/_local/outputs') {
      const forward = request(`${origin}${req.url}`, { headers: { host: new URL(origin).host } })
      forward.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      forward.end()
      return
    }
    req.resume()
    const status = req.url?.startsWith('/_local/') ? 403 : 500
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-amzn-errortype': status === 403 ? 'AccessDeniedException' : 'InternalFailure',
    })
    res.end(JSON.stringify({ message: `refused: ${said}`, code: 'internal_error', status }))
  })
  await new Promise<void>((resolve) => echoing.listen(0, '127.0.0.1', resolve))
  echoingOrigin = `http://127.0.0.1:${(echoing.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => echoing?.close(resolve))
  await server?.stop()
})

describe.concurrent('no key value in any message', () => {
  it('keys CLI: every command given a key value where an id, name, option or command belongs', async () => {
    // A key value where an id, a name or a plan belongs is a usage error (2) before any call.
    const commands: [string[], number][] = [
      [['revoke', value], 2],
      [['disable', value], 2],
      [['enable', value], 2],
      [['move', value, '--plan', 'pro'], 2],
      [['rotate', value], 2],
      [['rotate', value, '--overlap', '1x'], 2],
      [[value], 2],
      [['plan', value], 2],
      [['create', '--plan', value], 2],
      [['create', `--plan=${value}`], 2],
      [['create', '--customer', value], 2],
      [['plan', 'create', '--customer', value, '--per-minute', '1', '--per-day', '1'], 2],
      [['list', `--${value}`], 2],
      [['list', `--${value}=${value}`], 2],
    ]
    for (const [args, expected] of commands) {
      for (const target of [
        ['--url', origin],
        ['--url', echoingOrigin],
      ]) {
        const result = await run(runKeysCommand, [...target, ...args])
        expect(result.output, `keys ${args.join(' ')}`).not.toContain(value)
        expect(result.code, `keys ${args.join(' ')}: ${result.output}`).toBe(expected)
      }
    }
    // An unknown stage is a usage error too (2), its name masked.
    const stage = await run(runKeysCommand, ['--stage', value, 'list'])
    expect(stage.output).not.toContain(value)
    expect(stage.code).toBe(2)
    // The refusal says what to pass instead, without repeating what it got.
    expect((await run(runKeysCommand, ['--url', origin, 'revoke', value])).output).toContain(
      'that looks like a key value; pass its id',
    )
    // An id is still named, and the key given by value was not touched.
    expect((await run(runKeysCommand, ['--url', origin, 'revoke', 'nosuchkey1'])).output).toContain(
      'No key nosuchkey1 on stage local',
    )
    const listed = await run(runKeysCommand, ['--url', origin, 'list'])
    expect(listed.output).toContain(id)
    expect(listed.output).not.toContain(value)
  })

  it('smoke CLI: a key value as an argument, with usage errors, a refused key and an echoing server', async () => {
    const commands: [string[], number][] = [
      [[value], 2],
      [['--key', value], 2],
      [[`--key=${value}`], 2],
      [['--stage', 'production', '--key', value, '--allow-writes'], 2],
      [[`--${value}`], 2],
      [['--stage', value], 2],
      [['--base-url', `${echoingOrigin}/v1`, '--key', value], 1],
      [['--base-url', `${echoingOrigin}/v1`, '--key', value, '--allow-writes'], 1],
      [['--base-url', 'http://127.0.0.1:9/v1', '--key', value], 1],
    ]
    for (const [args, expected] of commands) {
      const result = await run(runSmokeCommand, args)
      expect(result.output, `smoke ${args.join(' ')}`).not.toContain(value)
      expect(result.code, result.output).toBe(expected)
    }
  })

  it('the local control plane repeats no key value it was sent', async () => {
    const headers = { [CONTROL_SECRET_HEADER]: server.controlSecret }
    const answers = await Promise.all([
      fetch(`${origin}/_local/apigateway/apikeys/${value}`, { headers }),
      fetch(`${origin}/_local/apigateway/apikeys/${value}/${value}`, { headers }),
      fetch(`${origin}/_local/apigateway/${value}`, { headers }),
      fetch(`${origin}/_local/${value}`, { headers }),
      fetch(`${origin}/_local/apigateway/apikeys/${id}`, {
        method: 'PATCH',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ patchOperations: [{ op: value, path: value, value }] }),
      }),
      fetch(`${origin}/_local/apigateway/apikeys/${id}`, {
        method: 'PATCH',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ patchOperations: [{ op: 'replace', path: `/${value}`, value }] }),
      }),
    ])
    for (const answer of answers) {
      const text = await answer.text()
      expect(answer.status, text).toBeGreaterThanOrEqual(400)
      expect(answer.status, text).toBeLessThan(500)
      expect(text).not.toContain(value)
    }
  })
})
