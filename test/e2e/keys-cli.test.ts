import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_VARIABLE } from '#keys/local-control-config.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { systemClock } from '#shared/time/clock.ts'
import { heldTimers } from '#test/support/held-timers.ts'
import { keysCommandOn } from '#test/support/keys-command-runner.ts'
import {
  apiClient,
  type InProcessServer,
  runScriptToExit,
  spawnScript,
  startInProcessServer,
  statusOf,
} from '#test/support/local-server.ts'
import { startRuleProxy } from '#test/support/rule-proxy.ts'

/**
 * `npm run keys` against the local server, whose keys take the path they take on AWS (control
 * plane, key sync, key mirror, authorizer). The server caches authorizer answers for 300 s, as
 * production does: only the flush after each change makes a revocation apply at once. Commands
 * run in this process (runKeysCommand, what the CLI runs), one as the real CLI process.
 */
let server: InProcessServer
let origin: string

beforeAll(async () => {
  server = await startInProcessServer(
    { PETSTORE_API_KEYS: '', PETSTORE_AUTHORIZER_CACHE_TTL: '300' },
    // No sync on a timer: a change is in force only by the CLI's own sync run (or syncKeys).
    { wrongKeysBeforeDelay: 100_000, clock: systemClock, timers: heldTimers() },
  )
  origin = new URL(server.baseUrl).origin
})
afterAll(async () => {
  await server?.stop()
})

/** The keys CLI against the server (its secret, `--url` its origin). */
const keys = (...args: string[]) => keysCommandOn(server)(...args)

const created = async (...args: string[]) => {
  const result = await keys('create', ...args)
  expect(result.code, result.stderr).toBe(0)
  const id = /created key (\w+)/.exec(result.stderr)?.[1] as string
  return { key: result.stdout.trim(), id }
}

const policyOf = async (key: string) => {
  const response = await apiClient(server.baseUrl, key).get('/pets?limit=1')
  expect(response.status).toBe(200)
  return response.headers.get('ratelimit-policy')
}

/** The status a key gets on its next request (the CLI says a change applies when it returns). */
const statusNow = (key: string) => statusOf(server.baseUrl, key)

describe('npm run keys, locally', () => {
  it('prints a key that works on its first request (the real CLI process)', async () => {
    const result = await runScriptToExit(
      'ops/keys/keys-cli.ts',
      ['--url', origin, 'create', '--plan', 'pro', '--name', 'alice'],
      { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
    )
    expect(result.code, result.output).toBe(0)
    const key = result.stdout.trim()
    expect(result.stdout).toBe(`${key}\n`)
    // A project key with the stage's MAC, as the first start's keys and the README show them.
    expect(key).toMatch(/^pkg1_[A-Za-z0-9]{32}_[0-9a-f]{32}$/)
    expect(result.output).toMatch(/created key \w+ "alice" on pro \(300\/minute, 10000\/day\)/)
    const first = await apiClient(server.baseUrl, key).get('/pets?limit=1')
    expect(first.status).toBe(200)
    expect(first.headers.get('x-ratelimit-limit')).toBe('300')
  })

  it('refuses a disabled key as soon as the command returns, and takes it back when enabled', async () => {
    const { key, id } = await created('--plan', 'free', '--name', 'bob')
    expect((await apiClient(server.baseUrl, key).get('/pets')).status).toBe(200)
    expect((await keys('disable', id)).code).toBe(0)
    expect(await statusNow(key)).toBe(401)
    expect((await keys('enable', 'bob')).code).toBe(0)
    expect((await apiClient(server.baseUrl, key).get('/pets')).status).toBe(200)
  })

  it('refuses a revoked key as soon as the command returns', async () => {
    const { key, id } = await created('--plan', 'business', '--name', 'carol')
    expect((await apiClient(server.baseUrl, key).get('/pets')).status).toBe(200)
    const revoked = await keys('revoke', id)
    expect(revoked.code).toBe(0)
    expect(revoked.stderr).toContain(`revoked (deleted) key ${id}: it gets 401 now`)
    expect(await statusNow(key)).toBe(401)
    expect((await keys('revoke', id)).code).toBe(1)
  })

  it("keeps a rotated key's old and new values working until the old one is revoked", async () => {
    const old = await created('--plan', 'pro', '--name', 'dave')
    const rotated = await keys('rotate', old.id)
    expect(rotated.code, rotated.stderr).toBe(0)
    const fresh = rotated.stdout.trim()
    expect(fresh).not.toBe(old.key)
    // A project key with the stage's MAC, as create makes them.
    expect(fresh).toMatch(/^pkg1_[A-Za-z0-9]{32}_[0-9a-f]{32}$/)
    for (const key of [old.key, fresh, old.key, fresh])
      expect(await policyOf(key)).toContain('q=300')
    expect((await keys('revoke', old.id)).code).toBe(0)
    expect(await statusNow(old.key)).toBe(401)
    expect((await apiClient(server.baseUrl, fresh).get('/pets')).status).toBe(200)
  })

  it('ends a rotation overlap by itself: the old key is marked with when it stops', async () => {
    const old = await created('--plan', 'free', '--name', 'erin')
    const rotated = await keys('rotate', old.id, '--overlap', '24h')
    expect(rotated.stderr).toMatch(new RegExp(`Key ${old.id} works until \\d{4}-\\d\\d-\\d\\dT`))
    const listed = await keys('list')
    expect(listed.stdout).toMatch(
      new RegExp(`${old.id}\\s+erin\\s+free\\s+yes\\s+\\S+\\s+\\d+\\s+works until`),
    )
  })

  it('moves a key to another plan: the headers show the new limits at once', async () => {
    const { key, id } = await created('--plan', 'pro', '--name', 'frank')
    expect(await policyOf(key)).toBe('"minute";q=300;w=60, "day";q=10000;w=86400')
    const moved = await keys('move', id, '--plan', 'business')
    expect(moved.stderr).toContain(`moved key ${id} from pro to business: its new limits apply now`)
    expect(await policyOf(key)).toBe('"minute";q=1000;w=60, "day";q=100000;w=86400')
  })

  it("gives a per-customer Enterprise plan's limits to its keys", async () => {
    const plan = await keys(
      'plan',
      'create',
      '--customer',
      'acme',
      '--per-minute',
      '20000',
      '--per-day',
      '5000000',
    )
    expect(plan.code, plan.stderr).toBe(0)
    const { key, id } = await created('--customer', 'acme', '--name', 'acme-prod')
    expect(await policyOf(key)).toBe('"minute";q=20000;w=60, "day";q=5000000;w=86400')
    const other = await created('--plan', 'free', '--name', 'grace')
    await keys('move', other.id, '--customer', 'acme')
    expect(await policyOf(other.key)).toContain('"minute";q=20000')

    const plans = await keys('plan', 'list')
    expect(plans.stdout).toMatch(
      /petstore-local-enterprise-acme\s+enterprise:acme\s+20000\s+5000000\s+2/,
    )
    const listed = await keys('list')
    expect(listed.stdout).toMatch(
      new RegExp(`${id}\\s+acme-prod\\s+enterprise:acme\\s+yes\\s+\\S+\\s+1\\b`),
    )
    // No key value is ever listed.
    expect(listed.stdout).not.toContain(key)
  })

  it('Ctrl-C while a rotation waits for the mirror: the new key printed and in API Gateway, the old one ending, both ids named', async () => {
    const old = await created('--plan', 'pro', '--name', 'ivan')
    // The local server behind a proxy that holds the CLI's key-sync run: the wait the CLI is in
    // when the operator presses Ctrl-C.
    const proxy = await startRuleProxy(origin, (req) =>
      req.method === 'POST' && req.url === '/_local/key-sync' ? 'hold' : 'forward',
    )
    try {
      const cli = spawnScript(
        'ops/keys/keys-cli.ts',
        ['--url', proxy.origin, 'rotate', old.id, '--overlap', '24h'],
        { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
      )
      await proxy.firstHeld
      cli.process.kill('SIGINT')
      expect(await cli.exited).toBe(1)
      const output = cli.output()
      const newId = /Key (\w+) is created on pro to replace key/.exec(output)?.[1] as string
      expect(output).toMatch(
        new RegExp(
          `Key ${newId} is created on pro to replace key ${old.id}, which works until \\S+, in API Gateway, but interrupted \\(SIGINT or SIGTERM\\) before the key mirror showed it`,
        ),
      )
      const fresh = cli.stdout().trim()
      expect(fresh).toMatch(/^\S{20,}$/)
      expect(output).not.toContain(old.key)
      // The scheduled sync's part: then the printed value is the new key, on the old key's plan.
      await server.syncKeys()
      expect(await policyOf(fresh)).toContain('q=300')
      expect(await policyOf(old.key)).toContain('q=300')
      const listed = await keys('list')
      expect(listed.stdout).toMatch(
        new RegExp(`${old.id}\\s+ivan\\s+pro\\s+yes\\s+\\S+\\s+\\d+\\s+works until`),
      )
      expect(listed.stdout).toMatch(new RegExp(`${newId}\\s+ivan\\s+pro\\s+yes`))
    } finally {
      await proxy.close()
    }
  })

  it('refuses a plan whose derived numbers API Gateway refuses, before asking, and makes none', async () => {
    // The DAY quota is 3 x per-day: 12e15, far past API Gateway's int32.
    const plan = await keys(
      'plan',
      'create',
      '--customer',
      'huge',
      '--per-minute',
      '100',
      '--per-day',
      '4000000000000000',
    )
    expect(plan.code).toBe(1)
    expect(plan.stderr).toContain(
      '--per-minute 100 --per-day 4000000000000000 make a usage plan API Gateway refuses: quota.limit must be an integer from 0 to 2147483647',
    )
    expect((await keys('plan', 'list')).stdout).not.toContain('huge')
  })

  it('a create whose mirror wait fails names the key and the exact command that revokes it', async () => {
    // The key sync refuses every run: the key is made and attached, but never seen in force.
    const failingSync = await startRuleProxy(origin, (req) =>
      req.url === '/_local/key-sync'
        ? { status: 403, body: { message: 'the key sync is refused' } }
        : 'forward',
    )
    const proxyOrigin = failingSync.origin
    try {
      let stdout = ''
      let stderr = ''
      const code = await runKeysCommand(
        ['--url', proxyOrigin, 'create', '--plan', 'free', '--name', 'unseen'],
        {
          stdout: (text) => {
            stdout += text
          },
          stderr: (text) => {
            stderr += text
          },
          env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
        },
      )
      expect(code, stderr).toBe(1)
      const value = stdout.trim()
      const id = /Key (\w{10}) is created on free in API Gateway, but/.exec(stderr)?.[1] as string
      expect(stderr).toContain(
        `If the key is not wanted: npm run keys -- --url ${proxyOrigin} revoke ${id}`,
      )
      expect(stderr).not.toContain(value)
      // API Gateway has it, the key mirror not yet: show does not say it works.
      expect(await statusNow(value)).toBe(401)
      const unseen = await keys('show', id, '--json')
      expect(JSON.parse(unseen.stdout)).toMatchObject({
        works: false,
        refusedBecause: expect.stringContaining('the key mirror does not have it yet: 401'),
      })
      expect((await keys('show', id)).stdout).toMatch(/state\s+the key mirror does not have it yet/)
      // The scheduled sync's part: then the key works, until the command named revokes it
      // (here against the server itself: the proxy refuses every sync).
      await server.syncKeys()
      expect(JSON.parse((await keys('show', id, '--json')).stdout)).toMatchObject({ works: true })
      expect(await statusNow(value)).toBe(200)
      const revoked = await keys('revoke', id)
      expect(revoked.code, revoked.stderr).toBe(0)
      expect(await statusNow(value)).toBe(401)
    } finally {
      await failingSync.close()
    }
  })

  it('answers usage errors with exit 2 and a pointer to --help, and a missing server with exit 1', async () => {
    for (const args of [
      ['create', '--plan', 'gold'],
      ['move', 'x'],
      ['frobnicate'],
      ['rotate', 'x', '--overlap', 'soon'],
      ['--stage', 'prod', 'list'],
    ]) {
      const result = await keys(...args)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr).toContain('npm run keys -- --help lists every command')
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(2)
    }
    let stderr = ''
    const code = await runKeysCommand(['--url', 'http://127.0.0.1:1', 'list'], {
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text
      },
      env: {},
    })
    expect(code).toBe(1)
    expect(stderr).toContain(
      'No local server answers at http://127.0.0.1:1: start it with npm start',
    )
  })

  it('follows no redirect with the control-plane secret: it stops and says why', async () => {
    // Another program on the port answers the CLI's requests with redirects to a third one.
    const received: string[] = []
    const elsewhere = await startRuleProxy(origin, (req) => {
      received.push(`${req.method} ${req.url} ${req.headers['x-petstore-local-secret'] ?? ''}`)
      return { status: 200, body: {} }
    })
    const redirecting = await startRuleProxy(origin, (req) =>
      req.url === '/_local/key-usage' || req.url === '/_local/key-sync'
        ? { status: 307, body: {}, headers: { location: `${elsewhere.origin}${req.url}` } }
        : 'forward',
    )
    try {
      const { id } = await created('--plan', 'free', '--name', 'redirected')
      const viaRedirect = keysCommandOn({
        baseUrl: redirecting.baseUrl,
        controlSecret: server.controlSecret,
      })
      const shown = await viaRedirect('show', id)
      expect(shown.code).toBe(1)
      expect(shown.stderr).toContain(
        `${redirecting.origin} answered a redirect (HTTP 307) where the local server answers: the keys CLI follows none`,
      )
      const disabled = await viaRedirect('disable', id)
      expect(disabled.code).toBe(1)
      expect(disabled.stderr).toContain('answered a redirect (HTTP 307)')
      expect(received).toEqual([])
    } finally {
      await redirecting.close()
    }
    // The management API's calls (the AWS SDK, which follows no redirect either).
    const redirectingAll = await startRuleProxy(origin, (req) =>
      req.url?.startsWith('/_local/apigateway')
        ? { status: 307, body: {}, headers: { location: `${elsewhere.origin}${req.url}` } }
        : 'forward',
    )
    try {
      const listed = await keysCommandOn({
        baseUrl: redirectingAll.baseUrl,
        controlSecret: server.controlSecret,
      })('list')
      expect(listed.code).toBe(1)
      expect(listed.stderr).toContain(
        'GetApiKeys was answered with a redirect (HTTP 307), which the keys CLI follows none of',
      )
      expect(received).toEqual([])
    } finally {
      await redirectingAll.close()
      await elsewhere.close()
    }
  })
})
