import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { captureOutput } from '#test/support/capture-output.ts'
import {
  apiClient,
  runLocalServerToExit,
  runScriptToExit,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * The key file (`<PETSTORE_DATA_DIR>/api-keys.json`) going bad, as an operator meets it: `npm
 * start` refuses to start on it; a running server tells once and keeps the keys it had.
 */
const GOOD = 'pro-GOODsecret0123456789abcdef'
const NEW = 'business-NEWsecret0123456789abc'
const CREATED = '2026-11-22T12:00:00.000Z'

/** Every 6-character piece of both keys: none may appear in anything the server prints. */
const PIECES = [GOOD, NEW].flatMap((key) =>
  Array.from({ length: key.length - 5 }, (_, i) => key.slice(i, i + 6)),
)

const entry = (key: string, plan: string) => ({ key, plan, createdAt: CREATED })
const keyFile = (...entries: object[]) => `${JSON.stringify({ keys: entries }, null, 2)}\n`
/** A hand edit gone wrong: the new key's closing quote is missing. */
const BROKEN_JSON = keyFile(entry(GOOD, 'pro'), entry(NEW, 'business')).replace(`${NEW}"`, NEW)
/** JSON, but the new entry's key is cut short. */
const SHORT_KEY = keyFile(entry(GOOD, 'pro'), entry(NEW.slice(0, 15), 'business'))

const dirs: string[] = []
const dataDirWith = async (text: string) => {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-keyfile-'))
  dirs.push(dir)
  await writeFile(join(dir, 'api-keys.json'), text)
  return dir
}
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

// Every unusable file takes this one path in both commands; what each problem is called, with no
// part of a key, is test/unit/local-key-file.test.ts's subject.
describe('a malformed key file', () => {
  it('with broken JSON: npm start and npm run keys exit 2 naming the file and the place', async () => {
    const dataDir = await dataDirWith(BROKEN_JSON)
    const file = join(dataDir, 'api-keys.json')
    const [started, listed] = await Promise.all([
      runLocalServerToExit({ PORT: '0', PETSTORE_DATA_DIR: dataDir }),
      runScriptToExit('local/keys-cli.ts', ['list'], { PETSTORE_DATA_DIR: dataDir }),
    ])
    for (const result of [started, listed]) {
      expect(result.code).toBe(2)
      expect(result.output).toContain(`${file} is not valid JSON: `)
      expect(result.output).not.toContain('    at ')
      for (const piece of PIECES) expect(result.output).not.toContain(piece)
    }
    expect(started.output).toContain('a string not closed on its line at line 9')
  })
})

describe('a key file that goes bad under a running server', () => {
  it('is reported once, keeps the last good keys working (no 500), and its fix applies', async () => {
    const dataDir = await dataDirWith(keyFile(entry(GOOD, 'pro')))
    const file = join(dataDir, 'api-keys.json')
    const server = await startInProcessServer({ PETSTORE_DATA_DIR: dataDir, PETSTORE_API_KEYS: '' })
    const output = captureOutput()
    try {
      const good = apiClient(server.baseUrl, GOOD)
      const added = apiClient(server.baseUrl, NEW)
      expect((await good.get('/pets')).status).toBe(200)

      await writeFile(file, BROKEN_JSON)
      const whileBroken = [
        await good.get('/pets'),
        await good.get('/pets'),
        await added.get('/pets'),
      ]
      expect(whileBroken.map((response) => response.status)).toEqual([200, 200, 401])
      await writeFile(file, SHORT_KEY)
      expect((await good.get('/pets')).status).toBe(200)
      expect((await good.get('/pets')).status).toBe(200)

      const reports = output
        .text()
        .split('\n')
        .filter((line) => line.includes(file))
      expect(reports).toHaveLength(2)
      expect(reports[0]).toContain('is not valid JSON: a string not closed on its line at line 9')
      expect(reports[1]).toContain('entry 2 has no valid "key"')
      for (const piece of PIECES) expect(output.text()).not.toContain(piece)

      // Fixed: the file's keys as they are now, and nothing more is reported.
      await writeFile(file, keyFile(entry(NEW, 'business')))
      expect((await added.get('/pets')).status).toBe(200)
      expect((await good.get('/pets')).status).toBe(401)
      expect(
        output
          .text()
          .split('\n')
          .filter((line) => line.includes(file)),
      ).toHaveLength(2)
    } finally {
      output.restore()
      await server.stop()
    }
  })
})
