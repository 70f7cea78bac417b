import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { LocalKeys } from '#local/control-plane/control-plane-bootstrap.ts'
import { readLocalConfig } from '#local/local-config.ts'
import { startBanner } from '#local/start-banner.ts'

/**
 * The lines `npm start` prints once it listens. The end-to-end tests read the printed banner of a
 * real `npm start` (test/e2e/local-server.test.ts); the lines only some data directories produce
 * are read here.
 */
const config = readLocalConfig({ PORT: '0', PETSTORE_DATA_DIR: 'data' })
const local = (keys: Partial<LocalKeys>) => ({
  baseUrl: 'http://127.0.0.1:4567/v1',
  embedded: true,
  endpoint: 'http://127.0.0.1:8000',
  keys: {
    poolKey: 'pool',
    created: [],
    fromEnv: [],
    others: 0,
    imported: 0,
    file: undefined,
    ...keys,
  },
})

describe('the start banner', () => {
  it('says how many keys moved from the key file of earlier versions, and where to', () => {
    const lines = startBanner(config, local({ imported: 1, file: 'data/control-plane.json' }))
    expect(lines).toContain(
      `  1 key(s) moved from api-keys.json into ${resolve('data/control-plane.json')}`,
    )
  })

  it('says nothing of the key file when no key moved', () => {
    const lines = startBanner(config, local({ others: 1, file: 'data/control-plane.json' }))
    expect(lines.join('\n')).not.toContain('api-keys.json')
    // The data directory is not the default one: the commands name it, so the CLI reads its secret.
    const dir = `PETSTORE_DATA_DIR=${resolve('data')}`
    expect(lines).toContain(
      `  1 key(s) from earlier starts (values are shown only when made; ids: ${dir} npm run keys -- --url http://127.0.0.1:4567 list)`,
    )
    // list shows no values: the banner says how to get a key that works now.
    expect(lines).toContain(
      `  a key to use now: KEY=$(${dir} npm run -s keys -- --url http://127.0.0.1:4567 create --plan free)`,
    )
  })

  it('prints keys commands that find the secret where npm start keeps it', () => {
    const keysLine = (env: Record<string, string>) =>
      startBanner(readLocalConfig({ PORT: '3000', ...env }), local({})).find((line) =>
        line.startsWith('Keys: '),
      )
    expect(keysLine({})).toMatch(/^Keys: npm run keys -- create --plan pro \| list/)
    expect(keysLine({ PETSTORE_DATA_DIR: '.petstore' })).toMatch(/^Keys: npm run keys -- create/)
    expect(keysLine({ PETSTORE_DATA_DIR: '/srv/pet store' })).toMatch(
      /^Keys: PETSTORE_DATA_DIR='\/srv\/pet store' npm run keys -- create/,
    )
    const secret = { PETSTORE_LOCAL_SECRET: 'banner-test-secret-0123456789abcdef0123' }
    expect(keysLine({ PETSTORE_DATA_DIR: 'data', ...secret })).toMatch(
      /^Keys: npm run keys -- create --plan pro \| list \| revoke <id> \(with the same PETSTORE_LOCAL_SECRET\)/,
    )
    expect(keysLine({ PETSTORE_DATA_DIR: ':memory:' })).toBe(
      "Keys: npm run keys cannot reach this server's keys (data in memory, no PETSTORE_LOCAL_SECRET): start with PETSTORE_LOCAL_SECRET set, and give the keys CLI the same",
    )
  })

  it('says where the control plane secret is, never what it is', () => {
    const secret = 'banner-test-secret-0123456789abcdef0123'
    const fromDir = startBanner(config, local({}))
    expect(fromDir).toContain(
      `Control plane secret (npm run keys reads it): ${resolve('data/control-plane-secret')}`,
    )
    const inMemory = startBanner(readLocalConfig({ PETSTORE_DATA_DIR: ':memory:' }), local({}))
    expect(inMemory.join('\n')).toContain(
      'this process only (data in memory; set PETSTORE_LOCAL_SECRET',
    )
    const fromEnv = startBanner(
      readLocalConfig({ PETSTORE_DATA_DIR: 'data', PETSTORE_LOCAL_SECRET: secret }),
      local({}),
    )
    expect(fromEnv.join('\n')).toContain('PETSTORE_LOCAL_SECRET (from the environment)')
    expect(fromEnv.join('\n')).not.toContain(secret)
  })

  it('refuses a malformed PETSTORE_LOCAL_SECRET without echoing it', () => {
    for (const secret of ['short', 'has/a/slash-0123456789abcdef0123456789']) {
      expect(() => readLocalConfig({ PETSTORE_LOCAL_SECRET: secret })).toThrow(
        /^PETSTORE_LOCAL_SECRET must be 32 to 128 characters/,
      )
      try {
        readLocalConfig({ PETSTORE_LOCAL_SECRET: secret })
      } catch (error) {
        expect((error as Error).message).not.toContain(secret)
      }
    }
  })
})
