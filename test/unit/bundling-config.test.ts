import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUNDLE_FILE, FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'

/**
 * The functions' esbuild options on what broke them: an import of `node:http` (the SDK's HTTP
 * handler takes it for any `http://` endpoint: DynamoDB Local, moto, `sam local`). The probe is
 * bundled exactly as a function is (alias, banner, format) and run in a plain Node 24 process,
 * as Lambda runs index.mjs; it makes a real DynamoDB call over HTTP to a server of the test's.
 */
const PROBE = `
import * as http from 'node:http'
import { Agent } from 'node:http'
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb'
const client = new DynamoDBClient({
  endpoint: process.env.PROBE_ENDPOINT,
  region: 'us-east-1',
  credentials: { accessKeyId: 'probe', secretAccessKey: 'probe' },
})
let tables
try {
  tables = (await client.send(new ListTablesCommand({}))).TableNames
} catch (error) {
  tables = String(error)
}
client.destroy()
console.log(JSON.stringify({
  namedAgent: typeof Agent,
  namespaceAgent: typeof http.Agent,
  tables,
  undiciLoaded: process.moduleLoadList.some((name) => name.includes('undici')),
}))
`

let dir: string
let server: Server
let probe: { namedAgent: string; namespaceAgent: string; tables: unknown; undiciLoaded: boolean }

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bundling-config-'))
  writeFileSync(join(dir, 'probe-source.mjs'), PROBE)
  const { banner, ...options } = FUNCTION_BUNDLING
  await build({
    ...options,
    mainFields: [...options.mainFields],
    banner: { js: banner },
    entryPoints: [join(dir, 'probe-source.mjs')],
    // The alias is a path from the repository root, as NodejsFunction runs esbuild there.
    absWorkingDir: REPO_ROOT,
    nodePaths: [join(REPO_ROOT, 'node_modules')],
    bundle: true,
    outfile: join(dir, BUNDLE_FILE),
    logLevel: 'error',
  })
  // DynamoDB's answer to ListTables, from this process: the probe's loop stays free for its client.
  server = createServer((_request, response) => {
    response.setHeader('content-type', 'application/x-amz-json-1.0')
    response.end(JSON.stringify({ TableNames: ['probe-table'] }))
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  const { port } = server.address() as AddressInfo
  const child = spawn(process.execPath, [join(dir, BUNDLE_FILE)], {
    env: { PATH: process.env.PATH, PROBE_ENDPOINT: `http://127.0.0.1:${port}` },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((exited) => child.on('close', exited))
  if (code !== 0) throw new Error(`the probe bundle failed: ${stderr}`)
  probe = JSON.parse(stdout)
})
afterAll(() => {
  server.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("the functions' bundling of node:http", () => {
  it('gives a bundle the real module: Agent is a class, by name and by namespace', () => {
    expect(probe.namedAgent).toBe('function')
    expect(probe.namespaceAgent).toBe('function')
  })

  it('lets the SDK call an http:// endpoint from a bundle', () => {
    expect(probe.tables).toEqual(['probe-table'])
  })

  it('keeps undici (the ES module wrapper of node:http) out of the process', () => {
    expect(probe.undiciLoaded).toBe(false)
  })
})
