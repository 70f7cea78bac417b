import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'
import { originalStack } from '#shared/observability/original-stack.ts'

/**
 * Functions run without --enable-source-maps: a logged error's stack is mapped back to the
 * TypeScript source from the bundle's .map file. The probe is bundled exactly as the functions
 * are and run in a plain `node` (vitest itself maps every stack, so it cannot show the difference).
 */
let dir: string
let probe: { raw: string; mapped: string; causeMapped: string }

const PROBE = `
import { withOriginalStack, originalStack } from '${join(REPO_ROOT, 'shared/observability/original-stack.ts')}'
const thrower = (): void => {
  const reason: string = 'deliberate'
  throw new Error(\`failed: \${reason}\`)
}
let error = new Error('none')
try { thrower() } catch (caught) { error = caught as Error }
const raw = error.stack ?? ''
const mapped = originalStack(raw)
const outer = withOriginalStack(new Error('outer', { cause: error }))
console.log(JSON.stringify({ raw, mapped, causeMapped: (outer.cause as Error).stack }))
`

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'original-stack-'))
  writeFileSync(join(dir, 'probe-source.ts'), PROBE)
  const { banner, ...options } = FUNCTION_BUNDLING
  await build({
    ...options,
    mainFields: [...options.mainFields],
    banner: { js: banner },
    entryPoints: [join(dir, 'probe-source.ts')],
    bundle: true,
    outfile: join(dir, 'index.mjs'),
    logLevel: 'error',
  })
  const run = spawnSync(process.execPath, [join(dir, 'index.mjs')], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
  })
  probe = JSON.parse(run.stdout)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('original stack', () => {
  it('a bundle without --enable-source-maps reports minified positions', () => {
    expect(probe.raw).toMatch(/index\.mjs:\d+:\d+/)
    expect(probe.raw).not.toMatch(/probe-source\.ts/)
  })

  it('maps them to the TypeScript line that threw, message kept', () => {
    expect(probe.mapped).toMatch(/probe-source\.ts:5:\d+/)
    expect(probe.mapped).not.toMatch(/index\.mjs:/)
    expect(probe.mapped.split('\n')[0]).toBe('Error: failed: deliberate')
  })

  it('maps an error cause too, in place, for the logger', () => {
    expect(probe.causeMapped).toMatch(/probe-source\.ts:5:\d+/)
  })

  it('leaves frames without a source map as they are', () => {
    const stack = 'Error: x\n    at f (/nowhere/app.mjs:1:2)\n    at node:internal/timers:5:6'
    expect(originalStack(stack)).toBe(stack)
  })
})
