import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BundledProbe, bundleProbe } from '#test/support/bundle-probe.ts'

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

let bundled: BundledProbe | undefined
let server: Server
let probe: { namedAgent: string; namespaceAgent: string; tables: unknown; undiciLoaded: boolean }

beforeAll(async () => {
  bundled = await bundleProbe(PROBE, 'mjs')
  // DynamoDB's answer to ListTables, from this process: the probe's loop stays free for its client.
  server = createServer((_request, response) => {
    response.setHeader('content-type', 'application/x-amz-json-1.0')
    response.end(JSON.stringify({ TableNames: ['probe-table'] }))
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  const { port } = server.address() as AddressInfo
  const child = spawn(process.execPath, [(bundled as BundledProbe).file], {
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
  bundled?.remove()
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
