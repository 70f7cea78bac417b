import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { keysCommandOn } from '#test/support/keys-command-runner.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { whileTheClockRuns } from '#test/support/moving-clock.ts'

/**
 * The same product for a store key (a key only in the stage's own store, never in API Gateway) as
 * for an API Gateway key, on the local server, through the keys CLI as an operator runs it: its
 * plan's exact minute and day limits with the rate-limit headers and Retry-After, suspension and
 * lift, list/show/usage and the month export with --json and --csv, move, rotate, disable, enable
 * and revoke, each in force when its command returns; metering under the pool key, so one store
 * key's flood never gets another a gateway 429; the pool key and forgeries refused. Only `Date` is
 * faked (as in keys-support.test.ts): the gateway, the functions' limiter and the CLI share one
 * clock, while sockets and timers stay real.
 */
const START = Date.UTC(2026, 10, 3, 12, 0, 5)

let server: InProcessServer

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
  server = await startInProcessServer({ PETSTORE_API_KEYS: '' }, { wrongKeysBeforeDelay: 100_000 })
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

const keys = (...args: string[]) => keysCommandOn(server)(...args)

const ok = async (...args: string[]) => {
  const result = await keys(...args)
  expect(result.code, result.stderr).toBe(0)
  return result
}

const createStoreKey = async (...args: string[]) => {
  const { stdout, stderr } = await ok('create', '--store', '--json', ...args)
  expect(stderr).toMatch(/created store key s-[a-z0-9]{10} .*: it works now/)
  return JSON.parse(stdout) as { id: string; value: string }
}

/** `n` requests of a key, `stepMs` apart on the faked clock. */
const send = async (value: string, n: number, stepMs = 400) => {
  const client = apiClient(server.baseUrl, value)
  const answers = []
  for (let i = 0; i < n; i += 1) {
    answers.push(await client.get('/pets?limit=1'))
    vi.setSystemTime(Date.now() + stepMs)
  }
  return answers
}

const codes = (answers: { status: number; json: unknown }[]) => {
  const counts: Record<string, number> = {}
  for (const answer of answers) {
    const code = answer.status === 200 ? '200' : (answer.json as { code: string }).code
    counts[code] = (counts[code] ?? 0) + 1
  }
  return counts
}

let alice: { id: string; value: string }

describe('a store key: the plans, limits, headers and suspension every key has', () => {
  it('is made by the keys CLI as a project key with a MAC, and works on its first request', async () => {
    alice = await createStoreKey('--plan', 'free', '--name', 'alice')
    expect(alice.id).toMatch(/^s-[a-z0-9]{10}$/)
    expect(alice.value).toMatch(/^pks1_[a-z0-9]{10}_[A-Za-z0-9]{32}_[0-9a-f]{32}$/)
    expect(alice.value.slice(5, 15)).toBe(alice.id.slice(2))
    expect(codes(await send(alice.value, 1))).toEqual({ '200': 1 })
  })

  it('floods its minute: exactly its limit, 429 rate_limited with the headers, then suspended; never a gateway 429, and another store key is unaffected', async () => {
    vi.setSystemTime(Date.UTC(2026, 10, 3, 12, 1, 5))
    const quiet = await createStoreKey('--plan', 'free', '--name', 'quiet')
    // 125 requests in one instant: more than a Free key's usage-plan bucket (120) lets through,
    // had store keys shared one bucket sized as a key's backstop. The pool plan has none.
    const answers = await send(alice.value, 125, 0)
    expect(codes(answers)).toEqual({ '200': 60, rate_limited: 60, key_suspended: 5 })
    const first = answers[0]
    expect(first?.headers.get('x-ratelimit-limit')).toBe('60')
    expect(first?.headers.get('ratelimit-policy')).toBe('"minute";q=60;w=60, "day";q=1000;w=86400')
    const refused = answers.find((answer) => answer.status === 429)
    expect(refused?.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(refused?.headers.get('retry-after')).toBe('55')
    // Every refusal is the functions' own, with its rate-limit headers: none is the gateway's.
    for (const answer of answers.filter((candidate) => candidate.status === 429)) {
      expect(answer.headers.get('x-ratelimit-limit')).toBe('60')
    }
    expect(codes(await send(quiet.value, 1))).toEqual({ '200': 1 })
  })

  it('is shown suspended and lifted by the CLI', async () => {
    const shown = JSON.parse((await ok('show', alice.id, '--json')).stdout)
    expect(shown).toMatchObject({
      id: alice.id,
      kind: 'store',
      name: 'alice',
      plan: 'free',
      limits: { perMinute: 60, perDay: 1_000 },
      enabled: true,
      works: false,
      usage: { minute: 60, day: 61 },
    })
    expect(shown.refusedBecause).toMatch(/suspended until .*lift/)
    vi.setSystemTime(Date.UTC(2026, 10, 3, 12, 2, 5))
    expect(codes(await send(alice.value, 1))).toEqual({ key_suspended: 1 })
    await whileTheClockRuns(ok('lift', alice.id))
    expect(codes(await send(alice.value, 1))).toEqual({ '200': 1 })
  })

  it('meets its day quota: 429 quota_exceeded until UTC midnight', async () => {
    await ok('plan', 'create', '--customer', 'tiny', '--per-minute', '2', '--per-day', '3')
    const tiny = await createStoreKey('--customer', 'tiny', '--name', 'tiny-app')
    const answers = await send(tiny.value, 4, 30_000)
    expect(codes(answers)).toEqual({ '200': 3, quota_exceeded: 1 })
    const midnight = Date.UTC(2026, 10, 4)
    expect(Number(answers.at(-1)?.headers.get('retry-after'))).toBe(
      Math.ceil((midnight - (Date.now() - 30_000)) / 1000),
    )
    expect(JSON.parse((await ok('show', tiny.id, '--json')).stdout)).toMatchObject({
      plan: 'enterprise:tiny',
      limits: { perMinute: 2, perDay: 3 },
    })
  })
})

describe('a store key as an operator manages it', () => {
  it('is listed beside API Gateway keys, a page at a time, with TODAY', async () => {
    const listed = JSON.parse((await ok('list', '--json')).stdout) as {
      id: string
      kind: string
      usedToday: number
    }[]
    expect(listed.find((row) => row.id === alice.id)).toMatchObject({
      kind: 'store',
      usedToday: 62,
    })
    expect(listed.some((row) => row.kind === 'console')).toBe(true)
    const page = await ok('list', '--store', '--limit', '1')
    expect(page.stdout.split('\n').filter((line) => line.startsWith('s-'))).toHaveLength(1)
    const after = /list --store --after (s-[a-z0-9]{10})/.exec(page.stderr)?.[1] as string
    const rest = await ok('list', '--store', '--after', after)
    // Three store keys so far (alice, quiet, tiny): the page after the first holds the other two.
    expect(rest.stdout.split('\n').filter((line) => line.startsWith('s-'))).toHaveLength(2)
    const free = JSON.parse((await ok('list', '--store', '--plan', 'free', '--json')).stdout)
    expect(free.map((row: { plan: string }) => row.plan)).toEqual(['free', 'free'])
    expect(free.map((row: { id: string }) => row.id)).toContain(alice.id)
  })

  it('moves to another plan, in force when the command returns', async () => {
    const moved = JSON.parse(
      (await whileTheClockRuns(ok('move', alice.id, '--plan', 'pro', '--json'))).stdout,
    )
    expect(moved).toMatchObject({ id: alice.id, from: 'free', to: 'pro' })
    const [answer] = await send(alice.value, 1)
    expect(answer?.headers.get('ratelimit-policy')).toBe(
      '"minute";q=300;w=60, "day";q=10000;w=86400',
    )
  })

  it('is disabled and enabled, each in force when the command returns', async () => {
    await whileTheClockRuns(ok('disable', alice.id))
    expect(codes(await send(alice.value, 1))).toEqual({ unauthorized: 1 })
    await whileTheClockRuns(ok('enable', alice.id))
    expect(codes(await send(alice.value, 1))).toEqual({ '200': 1 })
  })

  it('is rotated with an overlap, and the old key revoked: 401 at once', async () => {
    const rotated = await ok('rotate', alice.id, '--overlap', '1h', '--json')
    const successor = JSON.parse(rotated.stdout) as { id: string; value: string }
    expect(successor.id).not.toBe(alice.id)
    expect(rotated.stderr).toMatch(new RegExp(`Key ${alice.id} works until 2026-11-03T13:`))
    expect(codes(await send(successor.value, 1))).toEqual({ '200': 1 })
    expect(codes(await send(alice.value, 1))).toEqual({ '200': 1 })
    expect(JSON.parse((await ok('show', successor.id, '--json')).stdout)).toMatchObject({
      name: 'alice',
      plan: 'pro',
    })
    await whileTheClockRuns(ok('revoke', alice.id))
    expect(codes(await send(alice.value, 1))).toEqual({ unauthorized: 1 })
    expect((await keys('show', alice.id)).code).toBe(1)
  })

  it("keeps its usage history, exported with the month's CSV by id, name and plan", async () => {
    const [{ id }] = JSON.parse((await ok('list', '--store', '--plan', 'pro', '--json')).stdout)
    const history = JSON.parse((await ok('usage', id, '--json')).stdout) as { day: string }[]
    expect(history.at(-1)).toMatchObject({ keyId: id, day: '2026-11-03', requests: 1 })
    const csv = (await ok('usage', '--month', '2026-11', '--csv')).stdout.split('\r\n')
    expect(csv).toContain(`${id},alice,pro,2026-11-03,1`)
    // A revoked store key keeps its rows, without name and plan, as a revoked console key does.
    expect(csv).toContain(`${alice.id},,,2026-11-03,65`)
  })
})

describe('the pool key that meters store keys, and forgeries', () => {
  it('is no bearer key, and a forged store key costs the stage nothing but a 401', async () => {
    const pool = await send(server.keys.poolKey, 1)
    expect(codes(pool)).toEqual({ unauthorized: 1 })
    const forged = `pks1_${'a'.repeat(10)}_${'B'.repeat(32)}_${'0'.repeat(32)}`
    expect(codes(await send(forged, 1))).toEqual({ unauthorized: 1 })
  })
})
