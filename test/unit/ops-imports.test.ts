import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildSync } from 'esbuild'
import { describe, expect, it } from 'vitest'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const CLIS = readdirSync(`${repoRoot}ops`).filter((name) => name.endsWith('-cli.ts'))

/**
 * The operator tools (`npm run keys`, `npm run smoke`) stand on their own: nothing they load,
 * directly or through another module, comes from the development server (local/) or the test
 * suite (test/). What both need lives in shared/ or openapi/.
 */
describe('operator tools', () => {
  it.each(CLIS)('ops/%s loads nothing from local/ or test/', (cli) => {
    const { metafile } = buildSync({
      entryPoints: [`${repoRoot}ops/${cli}`],
      absWorkingDir: repoRoot,
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      packages: 'external',
      logLevel: 'silent',
    })
    const loaded = Object.keys(metafile.inputs)
    expect(loaded).toContain(`ops/${cli}`)
    expect(loaded.filter((file) => /^(local|test)\//.test(file))).toEqual([])
  })
})
