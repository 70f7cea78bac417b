import { connect, createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SHUTDOWN_GRACE_MS } from '#local/local-server.ts'
import { PLAN_NAMES } from '#shared/config/plans-config.ts'
import {
  apiClient,
  type LocalServer,
  runLocalServerToExit,
  startLocalServer,
} from '#test/support/local-server.ts'

/**
 * `npm start` as an operator meets it, so as child processes: start-up output, exit codes,
 * configuration errors and signals (restarts on the same data: local-server-restart.test.ts).
 */
// The groups of tests run one after another; within a group, tests that own their processes,
// ports and data run side by side.
describe.concurrent('local server', () => {
  /** A client that sent its headers and part of a body it never finishes. */
  const holdHalfSentBody = async (baseUrl: string, key: string) => {
    const url = new URL(baseUrl)
    const socket = connect(Number(url.port), url.hostname)
    await new Promise((resolveConnect) => socket.once('connect', resolveConnect))
    socket.on('error', () => undefined)
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"name":`,
    )
    // The request is routed, authorized and now waits for its body.
    await new Promise((resolveWait) => setTimeout(resolveWait, 300))
    return socket
  }

  // Two servers serve two tests each, in order: one reads the start-up output, the other ends
  // the server (a process each would cost a second of CPU and nothing more).
  describe('started with keys from PETSTORE_API_KEYS', { concurrent: false }, () => {
    const key = 'secret-given-key-0123456789abcdef'
    let server: LocalServer
    beforeAll(async () => {
      server = await startLocalServer({ PETSTORE_API_KEYS: `enterprise:${key}` })
    })
    afterAll(async () => {
      await server?.stop('SIGKILL')
    })

    it('does not print them', () => {
      expect(server.output()).not.toContain(key)
      expect(server.output()).toMatch(/enterprise\s+from PETSTORE_API_KEYS/)
    })

    it('stops within its grace period although a client holds a half-sent body', async () => {
      const socket = await holdHalfSentBody(server.baseUrl, key)
      const started = Date.now()
      const code = await server.stop('SIGTERM')
      // The promise is the bound: 3 s of grace plus closing the datastore, with a wide margin.
      expect(Date.now() - started).toBeLessThan(SHUTDOWN_GRACE_MS + 7_000)
      expect(code).toBe(0)
      socket.destroy()
    })
  })

  describe('started with no key anywhere', { concurrent: false }, () => {
    let server: LocalServer
    beforeAll(async () => {
      server = await startLocalServer({ PETSTORE_DATA_DIR: ':memory:', PETSTORE_API_KEYS: '' })
    })
    afterAll(async () => {
      await server?.stop('SIGKILL')
    })
    const printedKey = (plan: string) =>
      new RegExp(`^\\s+${plan}\\s+(\\S+)\\s+\\(new\\)`, 'm').exec(server.output())?.[1]

    it('creates and prints one key per plan, and they work', async () => {
      expect(server.output()).toContain(`listening at ${server.baseUrl}`)
      for (const plan of PLAN_NAMES) {
        const key = printedKey(plan)
        expect(key, `a ${plan} key is printed`).toBeTruthy()
        expect((await apiClient(server.baseUrl, key).get('/pets')).status).toBe(200)
      }
    })

    it('exits at once on a second signal', async () => {
      const socket = await holdHalfSentBody(server.baseUrl, printedKey('enterprise') ?? '')
      server.process.kill('SIGTERM')
      await new Promise((resolveWait) => setTimeout(resolveWait, 100))
      const code = await server.stop('SIGINT')
      expect(code).toBe(130)
      expect(server.output()).toContain('exiting now')
      socket.destroy()
    })
  })

  it('exits non-zero with a clear message when the port is taken', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const result = await runLocalServerToExit({ PORT: String(port) })
      expect(result.code).not.toBe(0)
      expect(result.output).toContain(`cannot listen on 127.0.0.1:${port}`)
    } finally {
      blocker.close()
    }
  })

  // Every malformed variable takes this one path (the message of each: test/unit/local-config.test.ts).
  it('exits 2 with a one-line message for a malformed variable, never echoing a key', async () => {
    const result = await runLocalServerToExit({ PETSTORE_API_KEYS: 'free:short-secret' })
    expect(result.code).toBe(2)
    expect(result.output).toMatch(
      /^petstore: PETSTORE_API_KEYS: the free key \(entry 1\) [^\n]+\n$/,
    )
    expect(result.output).not.toContain('short-')
  })
})
