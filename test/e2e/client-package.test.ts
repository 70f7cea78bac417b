import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type InProcessServer, ROOT, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The client as a consumer gets it: built by its npm script, packed with `npm pack`, installed
 * from the tarball into a fresh project (`--prefer-offline`: from the npm cache `npm ci` filled),
 * and the example of docs/client.md, as written there, type-checked against the installed
 * declarations and run against the local server.
 */
const run = promisify(execFile)
interface PackResult {
  filename: string
  version: string
}
const KEY = 'e2e-enterprise-client-package-01'

let server: InProcessServer
let consumer: string

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: `enterprise:${KEY}` })
  consumer = await mkdtemp(join(tmpdir(), 'petstore-consumer-'))
})
afterAll(async () => {
  await server?.stop()
  if (consumer) await rm(consumer, { recursive: true, force: true })
})

/** The code block under "## Example" in docs/client.md. */
const documentedExample = async () => {
  const doc = await readFile(join(ROOT, 'docs/client.md'), 'utf8')
  const example = /## Example\n\n```ts\n([\s\S]*?)```/.exec(doc)?.[1]
  if (!example) throw new Error('docs/client.md has no "## Example" ts block')
  return example
}

const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  })

describe('the client package', () => {
  it('installs from its tarball into a fresh project, and the documented example type-checks and runs there', async () => {
    await npm(['run', '-s', 'client:build'], ROOT)
    const packed = await npm(['pack', './client', '--pack-destination', consumer, '--json'], ROOT)
    const { filename, version } = (JSON.parse(packed.stdout) as PackResult[])[0] as PackResult
    const api = JSON.parse(await readFile(join(ROOT, 'openapi/openapi.json'), 'utf8'))
    expect(version).toBe(api.info.version)

    await writeFile(
      join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    )
    await npm(
      ['install', '--prefer-offline', '--no-package-lock', join(consumer, filename)],
      consumer,
    )
    const installed = JSON.parse(
      await readFile(join(consumer, 'node_modules/@petstore/client/package.json'), 'utf8'),
    )
    const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'))
    // The one openapi-fetch range: what the tests run the sources with is what consumers get.
    expect(installed.dependencies).toEqual({
      'openapi-fetch': root.devDependencies['openapi-fetch'],
    })

    const example = await documentedExample()
    expect(example).toContain("from '@petstore/client'")
    await writeFile(join(consumer, 'example.ts'), example)
    // The consumer's compiler sees only the installed package (its .d.ts) and Node's types.
    await run(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        'example.ts',
      ],
      { cwd: consumer },
    )

    const output = await run(process.execPath, ['example.ts'], {
      cwd: consumer,
      env: { ...process.env, PETSTORE_URL: server.baseUrl, PETSTORE_KEY: KEY },
    })
    expect(output.stdout).toMatch(/^\d+ Rex$/m)
    expect(output.stdout).toMatch(/^404 pet_not_found \S+$/m)
  }, 180_000)
})
