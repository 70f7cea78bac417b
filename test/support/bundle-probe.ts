// A probe bundled exactly as a function is, for tests of what a bundle does at run time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { BUNDLE_FILE, FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'

export interface BundledProbe {
  /** The bundle, `index.mjs`, for a plain `node` to run as Lambda runs it. */
  file: string
  remove(): void
}

/**
 * `source` (TypeScript or JavaScript, importing by absolute path or by package name) bundled with
 * the functions' esbuild options: format, banner, alias (a path from the repository root, as
 * NodejsFunction runs esbuild there), minification and source map.
 */
export const bundleProbe = async (
  source: string,
  extension: 'ts' | 'mjs',
): Promise<BundledProbe> => {
  const dir = mkdtempSync(join(tmpdir(), 'bundle-probe-'))
  const entry = join(dir, `probe-source.${extension}`)
  writeFileSync(entry, source)
  const { banner, ...options } = FUNCTION_BUNDLING
  await build({
    ...options,
    mainFields: [...options.mainFields],
    banner: { js: banner },
    entryPoints: [entry],
    absWorkingDir: REPO_ROOT,
    nodePaths: [join(REPO_ROOT, 'node_modules')],
    bundle: true,
    outfile: join(dir, BUNDLE_FILE),
    logLevel: 'error',
  })
  return {
    file: join(dir, BUNDLE_FILE),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
