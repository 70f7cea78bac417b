import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  APIGatewayClient,
  CreateApiKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, describe, expect, it } from 'vitest'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import { parseControlPlaneFile } from '#local/control-plane/control-plane-store.ts'
import { LocalConfigError } from '#local/local-config.ts'
import {
  apiClient,
  type InProcessServer,
  runLocalServerToExit,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * The files of the data directory as an operator meets them: the key file of earlier versions
 * (`api-keys.json`) moves into the local control plane once, and a control-plane or key file that
 * cannot be used stops `npm start` with exit 2, naming the place and never a piece of a key.
 */
const GOOD = 'pro-GOODsecret0123456789abcdef'
const NEW = 'business-NEWsecret0123456789abc'
const REVOKED = 'free-REVOKEDsecret0123456789ab'
const CREATED = '2026-11-22T12:00:00.000Z'

/** Every 6-character piece of the keys: none may appear in anything the server prints. */
const PIECES = [GOOD, NEW, REVOKED].flatMap((key) =>
  Array.from({ length: key.length - 5 }, (_, i) => key.slice(i, i + 6)),
)

const entry = (key: string, plan: string, extra: object = {}) => ({
  key,
  plan,
  createdAt: CREATED,
  ...extra,
})
const keyFile = (...entries: object[]) => `${JSON.stringify({ keys: entries }, null, 2)}\n`
/** A hand edit gone wrong: the new key's closing quote is missing. */
const BROKEN_JSON = keyFile(entry(GOOD, 'pro'), entry(NEW, 'business')).replace(`${NEW}"`, NEW)
/** JSON, but the new entry's key is cut short. */
const SHORT_KEY = keyFile(entry(GOOD, 'pro'), entry(NEW.slice(0, 15), 'business'))

const dirs: string[] = []
const dataDirWith = async (files: Record<string, string>) => {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-keyfile-'))
  dirs.push(dir)
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text)
  return dir
}
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

const sdk = (server: InProcessServer) =>
  new APIGatewayClient({
    endpoint: server.managementEndpoint,
    region: 'us-east-1',
    credentials: controlSecretCredentials(server.controlSecret),
  })

/** What `npm start` prints for a LocalConfigError before it exits 2 (local/start-local.ts). */
const printedFor = (error: Error) => `petstore: ${error.message}\n`

/** The start's refusal: it must not start (a server that did is stopped, and the test fails). */
const refusalOf = async (env: Record<string, string>): Promise<unknown> => {
  try {
    await (await startInProcessServer(env)).stop()
  } catch (error) {
    return error
  }
  throw new Error('the server started')
}

describe.concurrent('a file npm start cannot use', () => {
  // One real `npm start` for the CLI's part (exit code, one line, no stack); the files' cases
  // below are startLocal's refusals, in-process: a process each cost a second or two of CPU.
  it('stops npm start with exit 2 and one line naming the file and the place, never a key', async () => {
    const dataDir = await dataDirWith({ 'api-keys.json': BROKEN_JSON })
    const started = await runLocalServerToExit({ PORT: '0', PETSTORE_DATA_DIR: dataDir })
    expect(started.code).toBe(2)
    expect(started.output).toMatch(/^petstore: [^\n]+\n$/)
    expect(started.output).toContain(
      `${join(dataDir, 'api-keys.json')} is not valid JSON: a string not closed on its line at line 9`,
    )
    expect(started.output).not.toContain('    at ')
    for (const piece of PIECES) expect(started.output).not.toContain(piece)
  })

  it.each([
    [
      'api-keys.json',
      'broken JSON',
      BROKEN_JSON,
      'is not valid JSON: a string not closed on its line at line 9',
    ],
    ['api-keys.json', 'an entry with a malformed key', SHORT_KEY, ': entry 2 has no valid "key"'],
    [
      'control-plane.json',
      'broken JSON',
      `{ "version": 1, "apiKeys": [ { "id": "abc", "value": "${GOOD}, "name": "x" } ] }`,
      'is not valid JSON: ',
    ],
    [
      'control-plane.json',
      'a key value cut short',
      JSON.stringify({
        version: 1,
        apiKeys: [
          {
            id: 'abc',
            name: 'x',
            value: NEW.slice(0, 15),
            enabled: true,
            createdDate: 1,
            lastUpdatedDate: 1,
            tags: {},
          },
        ],
        usagePlans: [],
        usagePlanKeys: [],
      }),
      ': apiKeys[0].value is missing or not valid',
    ],
  ])(
    '%s with %s: refused as a malformed setting (exit 2) naming the file and the place, never a key',
    async (name, _, text, problem) => {
      const dataDir = await dataDirWith({ [name]: text })
      const refusal = await refusalOf({ PETSTORE_DATA_DIR: dataDir })
      // The class start-local.ts turns into exit 2 and its message alone: any other error is
      // printed with its stack and exits 1.
      expect(refusal).toBeInstanceOf(LocalConfigError)
      const printed = printedFor(refusal as LocalConfigError)
      expect(printed).toMatch(/^petstore: [^\n]+\n$/)
      expect(printed).toContain(
        `${join(dataDir, name)}${problem.startsWith(':') ? '' : ' '}${problem}`,
      )
      expect(printed).not.toContain('    at ')
      for (const piece of PIECES) expect(printed).not.toContain(piece)
    },
  )
})

describe('the key file of earlier versions', () => {
  it('moves into the local control plane once: its keys keep working, revoked ones stay revoked', async () => {
    const dataDir = await dataDirWith({
      'api-keys.json': keyFile(entry(GOOD, 'pro'), entry(REVOKED, 'free', { revokedAt: CREATED })),
    })
    // In-process: each start reads the data directory afresh, as a new process would (the first
    // is stopped before the second opens it). The banner's line for the moved keys is read in
    // test/unit/start-banner.test.ts; here, the count it prints.
    const env = { PETSTORE_DATA_DIR: dataDir, PETSTORE_API_KEYS: '' }
    const first = await startInProcessServer(env)
    try {
      const good = await apiClient(first.baseUrl, GOOD).get('/pets')
      expect(good.status).toBe(200)
      expect(good.headers.get('ratelimit-policy')).toContain('"minute";q=300')
      expect((await apiClient(first.baseUrl, REVOKED).get('/pets')).status).toBe(401)
      expect(first.keys.imported).toBe(1)

      const client = sdk(first)
      const { items = [] } = await client.send(new GetApiKeysCommand({ includeValues: true }))
      const goodId = items.find((key) => key.value === GOOD)?.id
      expect(goodId).toBeDefined()
      expect(items.some((key) => key.value === REVOKED)).toBe(false)
      // Revoked through the control plane, the key must not come back from the old file.
      await client.send(new DeleteApiKeyCommand({ apiKey: goodId }))
      client.destroy()
    } finally {
      await first.stop()
    }
    await expect(stat(join(dataDir, 'api-keys.json'))).rejects.toThrow()
    expect((await stat(join(dataDir, 'api-keys.json.imported'))).isFile()).toBe(true)
    const saved = await stat(join(dataDir, 'control-plane.json'))
    expect(saved.mode & 0o777).toBe(0o600)

    const second = await startInProcessServer(env)
    try {
      expect(second.keys.imported).toBe(0)
      expect((await apiClient(second.baseUrl, GOOD).get('/pets')).status).toBe(401)
    } finally {
      await second.stop()
    }
  })
})

describe('the control-plane file under a running server', () => {
  it('is never read again: a corrupted file changes nothing, and the next change writes it whole', async () => {
    const dataDir = await dataDirWith({})
    const server = await startInProcessServer({
      PETSTORE_DATA_DIR: dataDir,
      PETSTORE_API_KEYS: `pro:${GOOD}`,
    })
    const file = join(dataDir, 'control-plane.json')
    try {
      await writeFile(file, '{ "version": 1, "apiKeys": [')
      const good = apiClient(server.baseUrl, GOOD)
      expect((await good.get('/pets')).status).toBe(200)
      await server.syncKeys()
      expect((await good.get('/pets')).status).toBe(200)

      const client = sdk(server)
      await client.send(new CreateApiKeyCommand({ name: 'after', value: NEW, enabled: true }))
      client.destroy()
      const state = parseControlPlaneFile(await readFile(file, 'utf8'), file)
      // Whole: every key of the control plane, the stage's pool key (store keys' meter) included.
      expect(state.apiKeys.map((key) => key.value).sort()).toEqual(
        [GOOD, NEW, server.keys.poolKey].sort(),
      )
    } finally {
      await server.stop()
    }
  })
})
