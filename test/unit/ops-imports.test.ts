import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { moduleGraph } from '#test/support/module-graph.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const CLIS = readdirSync(`${repoRoot}ops`, { recursive: true, encoding: 'utf8' }).filter((name) =>
  name.endsWith('-cli.ts'),
)

/**
 * The operator tools (`npm run keys`, `npm run smoke`) stand on their own: nothing they load,
 * directly or through another module, comes from the development server (local/), the test
 * suite (test/), a Lambda's folder (functions/) or the CDK (infra/). What they need lives in
 * keys/, shared/ or openapi/ (docs/layout.md).
 */
describe('operator tools', () => {
  it.each(CLIS)('ops/%s loads nothing from local/, test/, functions/ or infra/', (cli) => {
    const loaded = Object.keys(moduleGraph(`${repoRoot}ops/${cli}`, repoRoot).inputs)
    expect(loaded).toContain(`ops/${cli}`)
    expect(loaded.filter((file) => /^(local|test|functions|infra)\//.test(file))).toEqual([])
  })
})
