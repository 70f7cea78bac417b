import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_FILE } from '#keys/local-control-config.ts'
import { readLocalConfig } from '#local/local-config.ts'
import { startBanner } from '#local/start-banner.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The keys CLI against a local server with a data directory of its own (not `.petstore`), run as
 * the server's banner prints it: the commands work; run without that directory, the CLI names
 * the secret file it tried and the fix; an option without its value and an unknown key get the
 * CLI's own words (docs/operations.md, "Output and exit codes").
 */
let dataDir: string
let elsewhere: string
let server: InProcessServer
/** The banner's keys command line: its variable assignment and the CLI's arguments. */
let printed: { env: Record<string, string>; args: string[] }

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'petstore-own-data-'))
  elsewhere = await mkdtemp(join(tmpdir(), 'petstore-other-data-'))
  server = await startInProcessServer({ PETSTORE_DATA_DIR: dataDir })
  const port = new URL(server.baseUrl).port
  const banner = startBanner(readLocalConfig({ PORT: port, PETSTORE_DATA_DIR: dataDir }), {
    baseUrl: server.baseUrl,
    embedded: true,
    endpoint: '',
    keys: server.keys,
  })
  const line = banner.find((text) => text.startsWith('Keys: ')) as string
  const match =
    /^Keys: (?:PETSTORE_DATA_DIR=(\S+) )?npm run keys -- (.*?) create --plan pro \| list \| revoke <id>/.exec(
      line,
    )
  if (!match) throw new Error(`no keys command in the banner line: ${line}`)
  printed = {
    env: match[1] ? { PETSTORE_DATA_DIR: match[1] } : {},
    args: (match[2] as string).split(' '),
  }
})
afterAll(async () => {
  await server?.stop()
  await rm(dataDir, { recursive: true, force: true })
  await rm(elsewhere, { recursive: true, force: true })
})

const keys = async (env: Record<string, string>, ...args: string[]) => {
  let stdout = ''
  let stderr = ''
  const code = await runKeysCommand(args, {
    stdout: (text) => {
      stdout += text
    },
    stderr: (text) => {
      stderr += text
    },
    env,
  })
  return { code, stdout, stderr }
}
const asPrinted = (...args: string[]) => keys(printed.env, ...printed.args, ...args)

describe('the keys CLI with a data directory of its own', () => {
  it('runs the commands the banner prints: it names the data directory', async () => {
    expect(printed.env).toEqual({ PETSTORE_DATA_DIR: dataDir })
    const listed = await asPrinted('list')
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toContain('first-free')
    const created = await asPrinted('create', '--plan', 'pro')
    expect(created.code, created.stderr).toBe(0)
    // A project key with the stage's MAC, as every local create makes.
    expect(created.stdout).toMatch(/^pkg1_[A-Za-z0-9]{32}_[0-9a-f]{32}\n$/)
  })

  it('names the secret file it tried and the fix when run without it', async () => {
    const missing = await keys({ PETSTORE_DATA_DIR: elsewhere }, ...printed.args, 'list')
    expect(missing.code).toBe(1)
    expect(missing.stderr).toBe(
      `keys: the local server at ${new URL(server.baseUrl).origin} wants its control plane secret, and there is none at ${join(elsewhere, CONTROL_SECRET_FILE)}: run the keys CLI with the data directory npm start was given: PETSTORE_DATA_DIR=<that directory> npm run keys -- … (npm start's banner prints the command line to use and where its secret is), or give both the same PETSTORE_LOCAL_SECRET\n`,
    )
    await writeFile(join(elsewhere, CONTROL_SECRET_FILE), `${'s'.repeat(40)}\n`)
    const refused = await keys({ PETSTORE_DATA_DIR: elsewhere }, ...printed.args, 'list')
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(
      `refused the control plane secret in ${join(elsewhere, CONTROL_SECRET_FILE)}, which is another data directory's: run the keys CLI with the data directory npm start was given`,
    )
    const variable = await keys({ PETSTORE_LOCAL_SECRET: 'v'.repeat(40) }, ...printed.args, 'list')
    expect(variable.stderr).toContain('refused the secret in PETSTORE_LOCAL_SECRET')
  })

  it.each([
    [['create', '--plan'], '--plan needs a value', 'create --plan <free|pro|business|enterprise>'],
    [
      ['create', '--plan', '--name', 'x'],
      '--plan needs a value (for one that starts with -, write --plan=<value>)',
      'create --plan',
    ],
    [['usage', 'abc', '--from'], '--from needs a value', 'usage <id> [--from D]'],
    [['plan', 'create', '--customer'], '--customer needs a value', 'plan list | plan create'],
    [['--stage'], '--stage needs a value', undefined],
  ])('%j: says which option lacks its value, then the synopsis', async (args, what, synopsis) => {
    const result = await asPrinted(...args)
    expect(result.code).toBe(2)
    const [first, second] = result.stderr.split('\n')
    expect(first).toBe(`keys: ${what}`)
    expect(second).toEqual(
      synopsis === undefined
        ? 'keys: npm run keys -- --help lists every command'
        : expect.stringMatching(
            new RegExp(`^keys: usage: npm run keys -- ${synopsis.replace(/[|[\]<>]/g, '\\$&')}`),
          ),
    )
    expect(result.stderr).not.toMatch(/Option '|argument (missing|is ambiguous)/)
  })

  it.each([
    ['show'],
    ['lift'],
    ['usage'],
    ['revoke'],
    ['disable'],
    ['enable'],
    ['rotate'],
    ['move', '--plan', 'pro'],
  ])('%s of an unknown key: one wording, pointing to list', async (command, ...options) => {
    const result = await asPrinted(command as string, 'nosuchkey1', ...options)
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      `keys: No key nosuchkey1 on stage local: PETSTORE_DATA_DIR=${dataDir} npm run keys -- ${printed.args.join(' ')} list shows its keys, by id and name\n`,
    )
  })
})
