import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { keyValuesIn, maskingArguments } from '#keys/key-value-mask.ts'
import { runKeysCommand, type TargetOpener } from '#ops/keys/keys-command.ts'
import { localServerOrigin, openStageTarget } from '#ops/keys/stage-target-resolver.ts'

/**
 * What the keys CLI can tell from its command line alone is reported before it opens a stage
 * (no AWS configuration check, no call), and a key value is never sent where an id belongs,
 * never echoed, wherever it sits in an argument.
 */
const KEY = 'Zq8dV2kLp0xYw4rT9sBn3mFh6jCe1uGa'

const run = async (argv: string[], open?: TargetOpener) => {
  let out = ''
  let opened = 0
  const opener: TargetOpener =
    open ??
    (async () => {
      opened += 1
      throw new Error('a stage was opened')
    })
  const code = await runKeysCommand(
    argv,
    { stdout: (text) => (out += text), stderr: (text) => (out += text), env: {} },
    opener,
  )
  return { code, out, opened }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('the keys CLI, before any call', () => {
  it('names a mistyped command with the one meant, before the stage is looked up', async () => {
    const { code, out, opened } = await run(['--stage', 'staging', 'lst'])
    expect({ code, opened }).toEqual({ code: 2, opened: 0 })
    expect(out).toContain('unknown command "lst": did you mean list?')
  })

  it('refuses an unknown plan before the stage is looked up', async () => {
    const { code, out, opened } = await run(['--stage', 'staging', 'create', '--plan', 'fre'])
    expect({ code, opened }).toEqual({ code: 2, opened: 0 })
    expect(out).toContain('--plan must be one of free, pro, business, enterprise')
  })

  it.each([
    [['--stage', 'prod', 'list'], '--stage prod is no deployed stage', 'did you mean production?'],
    [['--stage', 'stagin', 'list'], '--stage stagin is no deployed stage', 'did you mean staging?'],
    [['create', '--pln', 'free'], 'unknown option --pln', 'did you mean --plan?'],
    [['create', '--plan', 'fre'], '--plan must be one of', 'did you mean free?'],
    [['move', 'abc', '--plan', 'bussiness'], '--plan must be one of', 'did you mean business?'],
    [['plan', 'lst'], 'plan needs list or create', 'did you mean list?'],
    [['lst'], 'unknown command "lst"', 'did you mean list?'],
    [
      ['plan', 'create', '--customer', 'acme', '--per-minute', '100', '--per-day', '10'],
      '--per-day 10 is below --per-minute 100',
      '',
    ],
    [
      ['plan', 'create', '--customer', 'acme', '--per-minute', '0', '--per-day', '10'],
      '--per-minute must be a positive integer',
      '',
    ],
    [
      ['usage', 'abc', '--from', '2026-02-30'],
      '--from 2026-02-30 is not a day of the calendar',
      '',
    ],
    [['usage', 'abc', '--to', '2026-13-01'], '--to 2026-13-01 is not a day of the calendar', ''],
    [['usage', '--month', '2026-13'], '--month 2026-13 is not a month', ''],
    [['rotate', 'abc', '--overlap', 'soon'], '--overlap must look like 24h', ''],
  ])(
    'refuses %j with exit 2 before the stage is opened, in two lines naming the fix',
    async (argv, what, suggestion) => {
      const { code, out, opened } = await run(argv)
      expect({ code, opened }).toEqual({ code: 2, opened: 0 })
      const lines = out.trimEnd().split('\n')
      expect(lines[0]).toContain(what)
      expect(lines[0]).toContain(suggestion)
      // Not the whole usage text: the message, then the command's synopsis and where --help is.
      expect(lines).toHaveLength(2)
      expect(lines[1]).toContain('npm run keys -- --help lists every command')
    },
  )

  it('exits 2 before any call for each usage error docs/operations.md names', async () => {
    const docs = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8')
    const exitCodes = /\*\*Output and exit codes\.\*\*([\s\S]*?)\n\n/
      .exec(docs)?.[1]
      ?.replace(/\s+/g, ' ')
    for (const [documented, argv] of [
      ['unknown command', ['frobnicate']],
      ['or option', ['list', '--frobnicate']],
      ['an unknown plan', ['create', '--plan', 'gold']],
      ['or `--stage`', ['--stage', 'prod', 'list']],
      [
        '`--per-day` below `--per-minute`',
        ['plan', 'create', '--customer', 'a', '--per-minute', '9', '--per-day', '8'],
      ],
      ['such as `--from 2026-02-30`', ['usage', 'abc', '--from', '2026-02-30']],
    ] as const) {
      expect(exitCodes, documented).toContain(documented)
      const { code, opened } = await run([...argv])
      expect({ documented, code, opened }).toEqual({ documented, code: 2, opened: 0 })
    }
    expect(exitCodes).toContain('2 a usage error')
  })

  it("names the command's own synopsis under a usage error", async () => {
    const { out } = await run(['create', '--plan', 'fre'])
    expect(out.split('\n')[1]).toBe(
      'keys: usage: npm run keys -- create --plan <free|pro|business|enterprise> | --customer <name>  [--name <name>] [--store]; npm run keys -- --help lists every command',
    )
  })

  it('opens the stage for a well-formed command line of every command', async () => {
    for (const argv of [
      ['create', '--plan', 'pro'],
      ['list'],
      ['disable', 'abc'],
      ['enable', 'abc'],
      ['revoke', 'abc'],
      ['move', 'abc', '--customer', 'acme'],
      ['rotate', 'abc', '--overlap', '24h'],
      ['held'],
      ['confirm', 'abc'],
      ['plan', 'list'],
      ['plan', 'create', '--customer', 'acme', '--per-minute', '10', '--per-day', '10'],
      ['show', 'abc'],
      ['lift', 'abc'],
      ['usage', 'abc', '--from', '2028-02-29', '--to', '2028-03-01'],
      ['usage', '--month', '2026-11'],
    ]) {
      const { code, out, opened } = await run(['--stage', 'production', ...argv])
      // The test's opener refuses: a failure (exit 1) after the stage was asked for.
      expect({ argv, code, opened }, out).toEqual({ argv, code: 1, opened: 1 })
    }
  })

  it('answers `help` with the usage and success', async () => {
    const { code, out, opened } = await run(['help'])
    expect({ code, opened }).toEqual({ code: 0, opened: 0 })
    expect(out).toMatch(/^usage: npm run keys/)
  })

  it.each([
    ['the key itself', KEY],
    ['with its scheme', `Bearer ${KEY}`],
    ['with a comma', `${KEY},`],
    ['as a whole header', `Authorization: Bearer ${KEY}`],
  ])('refuses a key value typed where an id belongs (%s), and never repeats it', async (_, arg) => {
    for (const command of ['revoke', 'disable', 'rotate', 'move']) {
      const { code, out, opened } = await run(['--stage', 'staging', command, arg])
      expect({ code, opened }).toEqual({ code: 2, opened: 0 })
      expect(out).toContain('that looks like a key value; pass its id')
      expect(out).not.toContain(KEY)
    }
  })

  it('refuses a key value given as a name', async () => {
    const { code, out, opened } = await run(['create', '--plan', 'free', '--name', KEY])
    expect({ code, opened }).toEqual({ code: 2, opened: 0 })
    expect(out).not.toContain(KEY)
  })
})

describe('the control-plane secret goes to this machine only', () => {
  it('takes the base URL npm start prints as the server address', () => {
    expect(localServerOrigin('http://127.0.0.1:3000/v1')).toBe('http://127.0.0.1:3000')
    expect(localServerOrigin('http://localhost:3001/')).toBe('http://localhost:3001')
    expect(localServerOrigin('http://[::1]:3000')).toBe('http://[::1]:3000')
  })

  it.each(['http://10.0.0.5:3000', 'http://pets.example.com:3000/v1', 'https://127.0.0.1:3000'])(
    'refuses --url %s without a request',
    async (url) => {
      const fetchSpy = vi.spyOn(globalThis, 'fetch')
      const { code, out } = await run(['--url', url, 'list'], openStageTarget)
      expect(code).toBe(1)
      expect(out).toMatch(
        /only to 127\.0\.0\.1, ::1 or localhost|must be the local server's address/,
      )
      expect(fetchSpy).not.toHaveBeenCalled()
    },
  )
})

describe('masking a key value wherever it sits in an argument', () => {
  it('finds it in headers, lists and query strings, not in hosts and paths', () => {
    expect(keyValuesIn(`Authorization: Bearer ${KEY}`)).toContain(KEY)
    expect(keyValuesIn(`${KEY},`)).toContain(KEY)
    expect(keyValuesIn(`https://x.example.com/v1/pets?key=${KEY}`)).toContain(KEY)
    expect(
      keyValuesIn('https://abc123defg.execute-api.us-east-1.amazonaws.com/staging/v1'),
    ).toEqual([])
  })

  it('masks every occurrence in whatever a command writes', () => {
    let written = ''
    const write = maskingArguments(['revoke', `Bearer ${KEY}`], (text) => (written += text))
    write(`No API key ${KEY} (and again: ${KEY})`)
    expect(written).not.toContain(KEY)
  })
})
