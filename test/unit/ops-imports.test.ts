import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { moduleGraph } from '#test/support/module-graph.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const CLIS = readdirSync(`${repoRoot}ops`).filter((name) => name.endsWith('-cli.ts'))

/**
 * The operator tools (`npm run keys`, `npm run smoke`) stand on their own: nothing they load,
 * directly or through another module, comes from the development server (local/) or the test
 * suite (test/). What both need lives in shared/ or openapi/.
 */
describe('operator tools', () => {
  it.each(CLIS)('ops/%s loads nothing from local/ or test/', (cli) => {
    const loaded = Object.keys(moduleGraph(`${repoRoot}ops/${cli}`, repoRoot).inputs)
    expect(loaded).toContain(`ops/${cli}`)
    expect(loaded.filter((file) => /^(local|test)\//.test(file))).toEqual([])
  })
})
