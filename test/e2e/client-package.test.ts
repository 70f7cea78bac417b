import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type InProcessServer, ROOT, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The client as a consumer gets it: built by its npm script, packed with `npm pack` (with its
 * README and LICENSE), installed from the tarball into a fresh project set up by the commands and
 * tsconfig.json of docs/client.md (`--prefer-offline`: from the npm cache `npm ci` filled), and
 * the example written there compiled by that project's `tsc` and run against the local server.
 */
const run = promisify(execFile)
interface PackResult {
  filename: string
  version: string
  files: { path: string }[]
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

/** The fenced blocks of a Markdown file: the setup commands, the tsconfig.json, the example. */
const blocksOf = async (path: string) => {
  const text = await readFile(join(ROOT, path), 'utf8')
  const block = (pattern: RegExp, what: string) => {
    const found = pattern.exec(text)?.[1]
    if (!found) throw new Error(`${path} has no ${what}`)
    return found
  }
  return {
    setup: block(/```sh\n(npm init -y\n[\s\S]*?)```/, 'sh block starting with npm init -y'),
    tsconfig: block(/```json\n([\s\S]*?)```/, 'json block (tsconfig.json)'),
    example: block(/## Example\n[\s\S]*?```ts\n([\s\S]*?)```/, '"## Example" ts block'),
  }
}

const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  })

/** The version this repository has installed: what the npm cache `npm ci` filled holds. */
const installedVersion = async (name: string) =>
  (
    JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string
    }
  ).version

/**
 * One line of the documented setup, run as written, except: the tarball `npm pack` copies is this
 * run's (its name too), and packages are pinned to the versions installed here and taken from the
 * npm cache (no network).
 */
const runSetupLine = async (line: string, cwd: string, tarball: string) => {
  const args = line.replace(/#.*$/, '').trim().split(/\s+/).slice(1)
  const filename = basename(tarball)
  if (args[0] === 'pack') {
    return npm(
      args.map((arg) => (arg.endsWith('.tgz') ? tarball : arg)),
      cwd,
    )
  }
  if (args[0] !== 'install') return npm(args, cwd)
  const pinned = await Promise.all(
    args.map(async (arg) =>
      arg.endsWith('.tgz')
        ? `./${filename}`
        : /^[@a-z]/.test(arg) && arg !== 'install'
          ? `${arg}@${await installedVersion(arg)}`
          : arg,
    ),
  )
  return npm([...pinned, '--prefer-offline'], cwd)
}

describe('the client package', () => {
  it('packs its README and LICENSE; in a project set up as docs/client.md says, the documented example type-checks and runs', async () => {
    await npm(['run', '-s', 'client:build'], ROOT)
    const packed = await npm(['pack', './client', '--pack-destination', consumer, '--json'], ROOT)
    const { filename, version, files } = (
      JSON.parse(packed.stdout) as PackResult[]
    )[0] as PackResult
    const api = JSON.parse(await readFile(join(ROOT, 'openapi/openapi.json'), 'utf8'))
    expect(version).toBe(api.info.version)
    const packedPaths = files.map(({ path }) => path)
    expect(packedPaths).toEqual(expect.arrayContaining(['README.md', 'LICENSE', 'package.json']))

    // The README in the tarball gives the same steps and example as docs/client.md.
    const documented = await blocksOf('docs/client.md')
    expect(await blocksOf('client/README.md')).toEqual(documented)
    expect(documented.example).toContain("from '@petstore/client'")

    // A fresh project (its own directory, named as npm init expects), set up line by line.
    const project = join(consumer, 'my-app')
    await mkdir(project)
    for (const line of documented.setup.split('\n').filter((text) => text.trim() !== '')) {
      expect(line, 'a setup line runs npm').toMatch(/^npm /)
      await runSetupLine(line, project, join(consumer, filename))
    }
    await writeFile(join(project, 'tsconfig.json'), documented.tsconfig)
    await writeFile(join(project, 'example.ts'), documented.example)

    // The project records its own copy of the package, never a path into this repository.
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'))
    expect(manifest.dependencies['@petstore/client']).toBe(`file:${filename}`)

    const installed = JSON.parse(
      await readFile(join(project, 'node_modules/@petstore/client/package.json'), 'utf8'),
    )
    const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'))
    // The one openapi-fetch range: what the tests run the sources with is what consumers get.
    expect(installed.dependencies).toEqual({
      'openapi-fetch': root.devDependencies['openapi-fetch'],
    })

    // `npx tsc`: the project's own compiler, its tsconfig.json, no other options.
    await run(process.execPath, [join(project, 'node_modules/typescript/bin/tsc')], {
      cwd: project,
    })
    const output = await run(process.execPath, ['example.js'], {
      cwd: project,
      env: { ...process.env, PETSTORE_URL: server.baseUrl, PETSTORE_KEY: KEY },
    })
    expect(output.stdout).toMatch(/^\d+ Rex$/m)
    expect(output.stdout).toMatch(/^404 pet_not_found \S+$/m)
  }, 180_000)
})
