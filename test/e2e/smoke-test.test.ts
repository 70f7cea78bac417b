import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { APIGatewayClient, GetApiKeysCommand } from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_VARIABLE, controlSecretCredentials } from '#keys/local-control-config.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { openStageTarget } from '#ops/keys/stage-target-resolver.ts'
import { runSmokeCommand, smokeKeys } from '#ops/smoke/smoke-command.ts'
import { runSmoke } from '#ops/smoke/smoke-runner.ts'
import { BEARER_CHALLENGE } from '#shared/auth/bearer-token.ts'
import { ROUTES, writesOf } from '#shared/config/routes-config.ts'
import {
  type InProcessServer,
  runScriptToExit,
  spawnScript,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { type ProxyRule, startRuleProxy } from '#test/support/rule-proxy.ts'

/**
 * `npm run smoke` as an operator runs it after a deploy, here against the local server (and a
 * proxy in front of it that breaks the contract): its report and exit code. Runs happen in this
 * process (runSmokeCommand, what the CLI runs), one as the real CLI process.
 */
const KEY = 'smoke-given-key-0123456789abcdef'
/** The route a request the smoke test sent belongs to, by method and path (query aside). */
const routeCalled = (method: string, path: string) =>
  ROUTES.find(
    (route) =>
      route.method === method &&
      new RegExp(`^/v1${route.path.replace(/\{[^}]+\}/g, '[^/]+')}(?:\\?.*)?$`).test(path),
  )

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

/** A rule proxy in front of this file's local server. */
const startFaultyProxy = (rule: ProxyRule) => startRuleProxy(server.baseUrl, rule)

/** The ids of the local server's keys whose name starts with `smoke-` (the temporary keys). */
const smokeKeyIds = async (): Promise<string[]> => {
  const client = new APIGatewayClient({
    endpoint: server.managementEndpoint,
    region: 'us-east-1',
    credentials: controlSecretCredentials(server.controlSecret),
  })
  try {
    const { items = [] } = await client.send(new GetApiKeysCommand({ limit: 500 }))
    return items.filter((key) => key.name?.startsWith('smoke-')).map((key) => key.id as string)
  } finally {
    client.destroy()
  }
}

/** The id the run names as its temporary key. */
const temporaryKeyOf = (output: string) => /temporary key: (\w{10}) /.exec(output)?.[1]

/** `npm run smoke -- <args>` in this process with a server's control-plane secret: code, output. */
const smokeWith = async (controlSecret: string, args: string[]) => {
  let output = ''
  const write = (text: string) => {
    output += text
  }
  const code = await runSmokeCommand(args, {
    stdout: write,
    stderr: write,
    env: { [CONTROL_SECRET_VARIABLE]: controlSecret },
  })
  return { code, output }
}

const smoke = (...args: string[]) => smokeWith(server.controlSecret, args)

describe.concurrent('npm run smoke', () => {
  it('passes against the local server, with a temporary key it makes and revokes (the real CLI process)', async () => {
    const result = await runScriptToExit('ops/smoke/smoke-cli.ts', ['--base-url', server.baseUrl], {
      [CONTROL_SECRET_VARIABLE]: server.controlSecret,
    })
    expect(result.code, result.output).toBe(0)
    const reported = [...result.output.matchAll(/^ {2}ok {4}([^:]+): /gm)].map((m) => m[1])
    // The 401s first, before a key is made (an address locked out says so there); then the key.
    expect(reported.slice(0, 3)).toEqual(['401', 'temporary key', 'the key works'])
    expect(reported.slice(3, -3).sort()).toEqual([...OPERATIONS].sort())
    expect(reported.slice(-3)).toEqual([
      'every operation',
      'rate-limit headers',
      'temporary key revoked',
    ])
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
    // The count of failures, with the passes beside it: no count read for the other.
    expect(result.output).toContain(
      `FAILED: 2 of ${WITH_TEMPORARY_KEY} checks failed, ${WITH_TEMPORARY_KEY - 2} passed, `,
    )
  })

  it('with a refused --key fails on its first request, says what to do, and sends nothing more', async () => {
    const recording = await startFaultyProxy(() => 'forward')
    try {
      const wrong = 'smoke-wrong-key-0123456789abcdef'
      const result = await smoke('--base-url', recording.baseUrl, '--key', wrong)
      expect(result.code, result.output).toBe(1)
      expect(result.output).toContain(
        `  FAIL  the key works: the key given with --key was refused (401): it is mistyped, revoked or disabled, or a key of another stage. Check it (npm run keys -- --url ${recording.origin} list shows the stage's keys), or make one with npm run keys -- --url ${recording.origin} create --plan free`,
      )
      expect(result.output).toContain(
        'FAILED: 1 of 2 checks failed, 1 passed (the key does not work: the other checks did not run)',
      )
      // No retries with the refused key: no 429 of its own making to blame, no 30 s wait. As a
      // word: the output names the server's random port, which may have 429 in it (42937 did).
      expect(result.output).not.toMatch(/\b429\b/)
      // The 401 check first (an unknown key, none), then the key's one try, and nothing more.
      expect(recording.seen).toEqual([
        { method: 'GET', path: '/v1/pets', status: 401 },
        { method: 'GET', path: '/v1/pets', status: 401 },
        { method: 'GET', path: '/v1/pets?limit=1', status: 401 },
      ])
      expect(result.output).not.toContain(wrong)
    } finally {
      await recording.close()
    }
  })

  it('while a new key gets 401, tries again less and less often and says every 5 s what it waits for', async () => {
    let refusals = 4
    const slowKey = await startFaultyProxy((req) =>
      req.url === '/v1/pets?limit=1' && refusals-- > 0
        ? {
            status: 401,
            body: { code: 'unauthorized', message: 'Not yet.', status: 401 },
            headers: { 'WWW-Authenticate': BEARER_CHALLENGE },
          }
        : 'forward',
    )
    const target = await openStageTarget({
      url: slowKey.origin,
      env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
      warn: () => undefined,
    })
    try {
      // The wait's clock is this test's: each pause passes at once.
      let clock = 0
      const lines: string[] = []
      const result = await runSmoke({
        baseUrl: slowKey.baseUrl,
        keys: smokeKeys(target.admin),
        writes: true,
        report: (line) => lines.push(line),
        now: () => clock,
        sleep: async (ms) => {
          clock += ms
        },
      })
      expect(result.failed, lines.join('\n')).toBe(0)
      // Tries at 0, 1, 3, 7 and 12 s: four 401s where one a second would have been twelve.
      expect(lines).toContain('  ..    the key works: 401 so far, waited 7.0 s of at most 30 s')
      expect(lines).toContain('  ok    the key works: 200 after 12.0 s')
    } finally {
      target.close()
      await slowKey.close()
    }
  })

  it("from an address the WAF blocks (no Retry-After), says to wait out the WAF's 5 minutes", async () => {
    // As the WAF's keyless rule answers: 429 too_many_failed_auths, and no Retry-After.
    const blocking = await startFaultyProxy((req) =>
      req.headers.authorization === undefined || !req.headers.authorization.includes(KEY)
        ? {
            status: 429,
            body: { code: 'too_many_failed_auths', message: 'Too many.', status: 429 },
          }
        : 'forward',
    )
    try {
      const result = await smoke('--base-url', blocking.baseUrl, '--key', KEY)
      expect(result.code).toBe(1)
      expect(result.output).toContain(
        "  FAIL  401: this address is refused for 300 s more after too many failed authentications (429 too_many_failed_auths, no Retry-After: the WAF's 5-minute window)",
      )
      expect(blocking.seen).toHaveLength(2)
    } finally {
      await blocking.close()
    }
  })

  it('says what it waits for when a rate-limit answer pauses its calls', async () => {
    let limited = true
    const limiting = await startFaultyProxy((req) => {
      if (!limited || req.url !== '/v1/pets?limit=2') return 'forward'
      limited = false
      return {
        status: 429,
        body: { code: 'rate_limited', message: 'Slow down.', status: 429 },
        headers: { 'Retry-After': '1' },
      }
    })
    try {
      const result = await smoke('--base-url', limiting.baseUrl, '--key', KEY)
      expect(result.output).toContain(
        '  ..    GET /v1/pets?limit=2 answered 429 rate_limited: the next call waits 1 s',
      )
    } finally {
      await limiting.close()
    }
  })

  it('exits 2 on a usage error, in two lines: what is wrong, and where --help is', async () => {
    for (const [args, what] of [
      [['--key', KEY], '--key needs --base-url or --stage'],
      [
        ['--stage', 'prod'],
        '--stage prod is no deployed stage (staging, production; without --stage, the local server): did you mean production?',
      ],
      [['--stage', 'production', '--allow-writes'], "never writes to production's pet catalogue"],
      [['--jsn'], "Unknown option '--jsn'"],
    ] as const) {
      const result = await smoke(...args)
      expect(result.code, args.join(' ')).toBe(2)
      const lines = result.output.trimEnd().split('\n')
      expect(lines[0]).toContain(what)
      expect(lines.slice(1)).toEqual(['smoke: npm run smoke -- --help lists the options'])
    }
  })

  it('with --json prints one JSON document on stdout, its report on stderr', async () => {
    let stdout = ''
    let stderr = ''
    const code = await runSmokeCommand(['--base-url', server.baseUrl, '--key', KEY, '--json'], {
      stdout: (text) => {
        stdout += text
      },
      stderr: (text) => {
        stderr += text
      },
      env: {},
    })
    expect(code, stderr).toBe(0)
    const document = JSON.parse(stdout) as {
      baseUrl: string
      writes: boolean
      passed: number
      failed: number
      stopped: string | null
      answers: number
      checks: { name: string; ok: boolean; detail: string }[]
    }
    expect(document).toMatchObject({
      baseUrl: server.baseUrl,
      writes: false,
      passed: WITH_GIVEN_KEY,
      failed: 0,
      stopped: null,
    })
    const names = document.checks.map(({ name }) => name)
    expect(document.checks.every(({ ok }) => ok)).toBe(true)
    expect([...names.slice(0, 2), ...names.slice(-2)]).toEqual([
      '401',
      'the key works',
      'every operation',
      'rate-limit headers',
    ])
    expect(names.slice(2, -2).sort()).toEqual([...OPERATIONS].sort())
    expect(document.answers).toBeGreaterThanOrEqual(WITH_GIVEN_KEY)
    expect(stderr).toContain(`passed: ${WITH_GIVEN_KEY} of ${WITH_GIVEN_KEY} checks`)
    expect(stdout).not.toContain(KEY)
  })
})

describe.concurrent('npm run smoke leaves nothing behind', () => {
  it('with a given key and no --allow-writes writes nothing: createPet is checked with a body the API refuses', async () => {
    const created = await fetch(`${server.baseUrl}/pets`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${KEY}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': crypto.randomUUID(),
      },
      body: JSON.stringify({ name: 'listed', categoryId: 1 }),
    })
    expect(created.status).toBe(201)
    const recording = await startFaultyProxy(() => 'forward')
    try {
      const result = await smoke('--base-url', recording.baseUrl, '--key', KEY)
      expect(result.code, result.output).toBe(0)
      expect(result.output).toContain('(read-only: writes nothing)')
      expect(result.output).toContain(
        '  ok    createPet: 400 validation_failed for an empty name, nothing written',
      )
      expect(result.output).toContain(
        '  ok    getPet: 200, the pet listed; 404 pet_not_found for an id nobody has',
      )
      expect(result.output).toContain(`passed: ${WITH_GIVEN_KEY} of ${WITH_GIVEN_KEY} checks`)
      // Each operation that writes (the route table) is called once, and refused: nothing written.
      const writes = recording.seen.filter(({ method }) => method !== 'GET')
      expect(writes.map(({ method, path }) => routeCalled(method, path)?.operationId)).toEqual(
        ROUTES.filter(writesOf).map((route) => route.operationId),
      )
      expect(
        writes.filter(({ status }) => status < 400 || status >= 500),
        'a read-only run sends each write one the API refuses with a 4xx',
      ).toEqual([])
    } finally {
      await recording.close()
    }
  })

  it('creates a pet with a given key only when told to, and never on production', async () => {
    const written = await smoke('--base-url', server.baseUrl, '--key', KEY, '--allow-writes')
    expect(written.code, written.output).toBe(0)
    expect(written.output).toMatch(/ {2}ok {4}createPet: 201, pet \d+ with its Location/)
    const production = await smoke('--stage', 'production', '--allow-writes')
    expect(production.code).toBe(2)
    expect(production.output).toContain(
      "--allow-writes: the smoke test never writes to production's pet catalogue",
    )
  })

  it('revokes its key when the first sync fails', async () => {
    let syncs = 0
    const failing = await startFaultyProxy((req) =>
      req.url === '/_local/key-sync' && ++syncs === 1
        ? { status: 403, body: { message: 'the first sync is refused' } }
        : 'forward',
    )
    try {
      const result = await smoke('--base-url', failing.baseUrl)
      expect(result.code, result.output).toBe(1)
      const id = /Key (\w{10}) is created on free in API Gateway, but/.exec(result.output)?.[1]
      expect(id, result.output).toBeDefined()
      expect(result.output).toContain(`  FAIL  temporary key: Key ${id} is created on free`)
      expect(result.output).toContain(`  ok    temporary key revoked: ${id} deleted`)
      expect(await smokeKeyIds()).not.toContain(id)
    } finally {
      await failing.close()
    }
  })

  it('names a key it cannot revoke, with the exact command that revokes it', async () => {
    let refuseDeletes = true
    const refusing = await startFaultyProxy((req) =>
      refuseDeletes && req.method === 'DELETE' && req.url?.startsWith('/_local/apigateway/apikeys/')
        ? { status: 403, body: { message: 'not allowed by the test' } }
        : 'forward',
    )
    try {
      const result = await smoke('--base-url', refusing.baseUrl)
      expect(result.code, result.output).toBe(1)
      const id = temporaryKeyOf(result.output) as string
      const command = /revoke it with (.+)$/m.exec(result.output)?.[1] ?? ''
      expect(result.output).toContain(
        `  FAIL  temporary key revoked: API Gateway refused DeleteApiKey`,
      )
      expect(command).toBe(`npm run keys -- --url ${refusing.origin} revoke ${id}`)
      expect(await smokeKeyIds()).toContain(id)
      // The operator runs the command it printed.
      refuseDeletes = false
      let said = ''
      const revoked = await runKeysCommand(command.split(' ').slice(4), {
        stdout: () => undefined,
        stderr: (text) => {
          said += text
        },
        env: { [CONTROL_SECRET_VARIABLE]: server.controlSecret },
      })
      expect(revoked, said).toBe(0)
      expect(await smokeKeyIds()).not.toContain(id)
    } finally {
      await refusing.close()
    }
  })

  it('on SIGINT stops its checks, revokes its key and exits 1 (the real CLI process)', async () => {
    let hold = true
    let onHeld: () => void = () => undefined
    const held = new Promise<void>((resolve) => {
      onHeld = resolve
    })
    // The first request with the new key is held: the run is mid-check when Ctrl-C comes.
    const holding = await startFaultyProxy((req) => {
      if (!hold || req.url !== '/v1/pets?limit=1') return 'forward'
      hold = false
      onHeld()
      return 'hold'
    })
    try {
      const cli = spawnScript('ops/smoke/smoke-cli.ts', ['--base-url', holding.baseUrl], {
        [CONTROL_SECRET_VARIABLE]: server.controlSecret,
      })
      await held
      cli.process.kill('SIGINT')
      expect(await cli.exited, cli.output()).toBe(1)
      const output = cli.output()
      const id = temporaryKeyOf(output) as string
      expect(output).toContain(
        '  FAIL  interrupted (SIGINT or SIGTERM): the remaining checks did not run',
      )
      expect(output).toContain(`  ok    temporary key revoked: ${id} gets 401`)
      expect(output).not.toContain('createPet')
      expect(await smokeKeyIds()).not.toContain(id)
    } finally {
      await holding.close()
    }
  })

  it('a second SIGINT while it revokes exits 130 at once, naming the key and the command (the real CLI process)', async () => {
    let heldRequest: () => void = () => undefined
    let heldDelete: () => void = () => undefined
    const requestHeld = new Promise<void>((resolve) => {
      heldRequest = resolve
    })
    const deleteHeld = new Promise<void>((resolve) => {
      heldDelete = resolve
    })
    let holdRequest = true
    // The first request with the new key, then the key's deletion, are held.
    const holding = await startFaultyProxy((req) => {
      if (holdRequest && req.url === '/v1/pets?limit=1') {
        holdRequest = false
        heldRequest()
        return 'hold'
      }
      if (req.method === 'DELETE' && req.url?.startsWith('/_local/apigateway/apikeys/')) {
        heldDelete()
        return 'hold'
      }
      return 'forward'
    })
    try {
      const cli = spawnScript('ops/smoke/smoke-cli.ts', ['--base-url', holding.baseUrl], {
        [CONTROL_SECRET_VARIABLE]: server.controlSecret,
      })
      await requestHeld
      cli.process.kill('SIGINT')
      await deleteHeld
      cli.process.kill('SIGINT')
      expect(await cli.exited, cli.output()).toBe(130)
      const id = temporaryKeyOf(cli.output()) as string
      expect(cli.output()).toContain(
        `smoke: SIGINT again: stopped at once; temporary key ${id} is left: revoke it with npm run keys -- --url ${holding.origin} revoke ${id}`,
      )
    } finally {
      await holding.close()
    }
  })
})

describe('npm run smoke from an address locked out for failed authentications', () => {
  it('says how long to wait, makes no key, and fails no other check', async () => {
    const strict = await startInProcessServer(
      { PETSTORE_API_KEYS: '' },
      { edgeNumbers: { wafKeylessPer5Minutes: 2 } },
    )
    try {
      // Three requests without a key from this address: past the edge's keyless limit (lowered
      // to 2 here), its requests without a valid key get 429, as from the WAF's keyless rule.
      for (let i = 0; i < 3; i += 1) {
        const answer = await fetch(`${strict.baseUrl}/pets`)
        await answer.arrayBuffer()
      }
      const { code, output } = await smokeWith(strict.controlSecret, ['--base-url', strict.baseUrl])
      expect(code, output).toBe(1)
      const seconds = /this address is refused for (\d+) s more/.exec(output)?.[1]
      expect(Number(seconds)).toBeGreaterThan(0)
      expect(Number(seconds)).toBeLessThanOrEqual(60)
      expect(output).toContain(
        `  FAIL  401: this address is refused for ${seconds} s more after too many failed authentications (429 too_many_failed_auths, Retry-After ${seconds}): requests without a valid key get 429, not 401, until then. Wait ${seconds} s and run the smoke test again`,
      )
      expect(output).toContain(
        `FAILED: 1 of 1 checks failed, 0 passed (this address is locked out for ${seconds} s: the other checks did not run)`,
      )
      expect(output).not.toContain('temporary key')
    } finally {
      await strict.stop()
    }
  })
})
