import { afterEach, describe, expect, it, vi } from 'vitest'
import { keyValuesIn, maskingArguments } from '#keys/key-value-mask.ts'
import { KEYS_USAGE, runKeysCommand, type TargetOpener } from '#ops/keys/keys-command.ts'
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

  it('takes every command its usage lists (it opens the stage for each)', async () => {
    const commands = [...KEYS_USAGE.matchAll(/^ {2}([a-z]+)\b/gm)].map(
      (match) => match[1] as string,
    )
    expect(commands).toEqual(expect.arrayContaining(['create', 'held', 'show', 'lift', 'usage']))
    for (const command of new Set(commands)) {
      const { code, out, opened } = await run(['--stage', 'staging', command])
      expect({ command, code, opened }, out).toEqual({ command, code: 1, opened: 1 })
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
