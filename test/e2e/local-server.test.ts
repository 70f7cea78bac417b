import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
 * configuration errors, signals and restarts on the same data.
 */
const dirs: string[] = []
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-e2e-'))
  dirs.push(dir)
  return dir
}
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

// The groups of tests run one after another; within a group, tests that own their processes,
// ports and data run side by side.
describe.concurrent('local server', () => {
  // One data directory restarted twice, in order: a SIGTERM mid-traffic, then a SIGKILL mid-load
  // of the server that came back (a fresh start of its own would cost a process, prove no more).
  describe('restarted on the same data', { concurrent: false }, () => {
    const key = 'restart-key-0123456789abcdef'
    let env: Record<string, string>
    /** The server running on that data: the first test restarts it, the second kills it. */
    let restarted: LocalServer | undefined
    beforeAll(async () => {
      env = { PETSTORE_DATA_DIR: await tempDir(), PETSTORE_API_KEYS: `enterprise:${key}` }
    })
    afterAll(async () => {
      await restarted?.stop('SIGKILL')
    })

    it('keeps every acknowledged pet across a restart, also when stopped mid-traffic, and never reuses an id', async () => {
      const first = await startLocalServer(env)
      const api = apiClient(first.baseUrl, key)
      const created = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          api.post<{ id: number }>('/pets', {
            name: `Keeper ${i}`,
            categoryId: i,
            status: 'available',
          }),
        ),
      )
      expect(created.filter((response) => response.status !== 201)).toEqual([])

      // SIGTERM as soon as the first of 60 concurrent creates is answered: the rest are in flight.
      const acknowledged: number[] = []
      let stopped: Promise<number | null> | undefined
      await Promise.allSettled(
        Array.from({ length: 60 }, (_, i) =>
          api
            .post<{ id: number }>('/pets', { name: `Inflight ${i}`, categoryId: i })
            .then((response) => {
              if (response.status === 201) acknowledged.push(response.json.id)
              stopped ??= first.stop('SIGTERM')
            }),
        ),
      )
      expect(await stopped).toBe(0)
      expect(acknowledged.length).toBeGreaterThan(0)

      restarted = await startLocalServer(env)
      const again = apiClient(restarted.baseUrl, key)
      for (const response of created) {
        const fetched = await again.get(`/pets/${response.json.id}`)
        expect(fetched.status).toBe(200)
        expect(fetched.json).toEqual(response.json)
      }
      // One at a time: a burst of reads on a busy CI machine could meet the datastore's time
      // limits (503), which is not what this test is about.
      const fetched = []
      for (const id of acknowledged) fetched.push(await again.get(`/pets/${id}`))
      expect(fetched.map((response) => response.status)).toEqual(acknowledged.map(() => 200))
      const next = await again.post<{ id: number }>('/pets', {
        name: 'After restart',
        categoryId: 1,
      })
      expect(next.status).toBe(201)
      expect([...created.map((response) => response.json.id), ...acknowledged]).not.toContain(
        next.json.id,
      )
    })

    it('survives SIGKILL mid-load: every pet that got a 201 is there after a restart, cursors too', async () => {
      const server = restarted
      if (!server) throw new Error('the previous test left no restarted server')
      const api = apiClient(server.baseUrl, key)
      for (let i = 0; i < 3; i += 1) {
        await api.post('/pets', { name: `Paged ${i}`, categoryId: i, status: 'pending' })
      }
      const page = await api.get('/pets?status=pending&limit=1')
      const cursor = page.headers.get('x-next-cursor')
      expect(cursor).toBeTruthy()

      // 16 clients create pets without pause; kill -9 once 40 are acknowledged, so creates are in
      // flight and no shutdown code runs. (16, not hundreds at once: on a busy CI machine a burst
      // meets the datastore's time limits and answers 503, which is not what this test is about.)
      const acknowledged: number[] = []
      let killed: Promise<number | null> | undefined
      let next = 0
      const client = async () => {
        while (killed === undefined && next < 400) {
          const i = next
          next += 1
          const response = await api
            .post<{ id: number }>('/pets', { name: `Killed ${i}`, categoryId: i })
            // The connection the kill cut (fetch's TypeError); anything else is a failure.
            .catch((error: unknown) => {
              if (error instanceof TypeError) return undefined
              throw error
            })
          if (response?.status === 201) acknowledged.push(response.json.id)
          if (acknowledged.length >= 40) killed ??= server.stop('SIGKILL')
        }
      }
      await Promise.all(Array.from({ length: 16 }, client))
      expect(await killed).toBeNull()
      expect(acknowledged.length).toBeGreaterThanOrEqual(40)

      restarted = await startLocalServer(env)
      const again = apiClient(restarted.baseUrl, key)
      // One at a time: a burst of reads on a busy CI machine could meet the datastore's time
      // limits (503), which is not what this test is about.
      const fetched = []
      for (const id of acknowledged) fetched.push(await again.get(`/pets/${id}`))
      expect(fetched.map((response) => response.status)).toEqual(acknowledged.map(() => 200))
      // The cursor secret is kept in the data directory: a cursor from before still works.
      const nextPage = await again.get(`/pets?status=pending&limit=1&cursor=${cursor}`)
      expect(nextPage.status).toBe(200)
      expect(nextPage.json).toHaveLength(1)
      expect(await restarted.stop('SIGINT')).toBe(0)
    })
  })

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
