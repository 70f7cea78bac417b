import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'
import { originalStack } from '#shared/observability/original-stack.ts'
import { type BundledProbe, bundleProbe } from '#test/support/bundle-probe.ts'

/**
 * Functions run without --enable-source-maps: a logged error's stack is mapped back to the
 * TypeScript source from the bundle's .map file. The probe is bundled exactly as the functions
 * are and run in a plain `node` (vitest itself maps every stack, so it cannot show the difference).
 */
let bundled: BundledProbe | undefined
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
  bundled = await bundleProbe(PROBE, 'ts')
  const run = spawnSync(process.execPath, [bundled.file], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
  })
  probe = JSON.parse(run.stdout)
})
afterAll(() => bundled?.remove())

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
