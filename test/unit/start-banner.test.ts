import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { LocalKeys } from '#local/control-plane-bootstrap.ts'
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
  keys: { created: [], fromEnv: [], others: 0, imported: 0, file: undefined, ...keys },
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
    expect(lines).toContain('  1 other key(s): npm run keys -- --url http://127.0.0.1:4567 list')
  })
})
