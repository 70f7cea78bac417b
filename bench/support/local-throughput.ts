import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { INT32_MAX } from '#keys/usage-plan-numbers-config.ts'
import type { readLocalConfig } from '#local/local-config.ts'
import type { startLocal } from '#local/local-server.ts'
import { ROUTES } from '#shared/config/routes-config.ts'

// The bench's local throughput run: the local server under autocannon, per request.

const KEY = 'bench-local-enterprise-0123456789abcdef'
/**
 * Limits no load test reaches, so every request takes the admitted path, and whose usage plan
 * API Gateway would accept (its daily quota, three days' requests, must fit an Int32).
 */
const PER_DAY = Math.floor(INT32_MAX / 3)
const PER_MINUTE = 10_000_000

interface LocalModules {
  startLocal: typeof startLocal
  readLocalConfig: typeof readLocalConfig
}

/** The local server's modules from a checkout: this one, or a baseline's copy. */
const localModules = async (root: string): Promise<LocalModules> => {
  const server = await import(pathToFileURL(join(root, 'local/local-server.ts')).href)
  const config = await import(pathToFileURL(join(root, 'local/local-config.ts')).href)
  return { startLocal: server.startLocal, readLocalConfig: config.readLocalConfig }
}

interface Server {
  label: string
  baseUrl: string
  stop(): Promise<void>
}

const start = async (label: string, root: string): Promise<Server> => {
  const modules = await localModules(root)
  const server = await modules.startLocal(
    modules.readLocalConfig({
      PORT: '0',
      PETSTORE_DATA_DIR: ':memory:',
      PETSTORE_API_KEYS: `enterprise:${KEY}`,
      ENTERPRISE_LIMITS: `${PER_MINUTE}/${PER_DAY}`,
    }),
  )
  return { label, baseUrl: server.baseUrl, stop: () => server.stop() }
}

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }
const body = JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' })

/**
 * A request path naming `{newPetId}` (a delete) takes a pet of its own each time: autocannon
 * creates one, then sends the request on it, and the row counts both. Workers take functions as
 * files they can require, so the two steps are written as such.
 */
const NEW_PET = '{newPetId}'

const requestScripts = () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-throughput-'))
  const onCreated = join(dir, 'on-created.cjs')
  const onPet = join(dir, 'on-pet.cjs')
  writeFileSync(
    onCreated,
    'module.exports = (status, body, context) => { context.petId = JSON.parse(body).id }\n',
  )
  writeFileSync(
    onPet,
    `module.exports = (request, context) => ({ ...request, path: request.path.replace('${NEW_PET}', String(context.petId)) })\n`,
  )
  return { onCreated, onPet }
}

const petOfItsOwn = (
  method: string,
  path: string,
  { onCreated, onPet }: ReturnType<typeof requestScripts>,
) => ({
  requests: [
    {
      method: 'POST' as const,
      path: path.replace(/\/pets\/.*$/, '/pets'),
      body,
      onResponse: onCreated as never,
    },
    { method: method as 'DELETE', path, setupRequest: onPet as never },
  ],
})

/**
 * The local server (same handlers, embedded DynamoDB) under autocannon on loopback (in a worker
 * thread), 10 connections for `seconds` per request; with `baselineRoot`, the baseline's server too, each
 * request measured on one server and then the other.
 */
export const localThroughput = async (
  repoRoot: string,
  seconds: number,
  baseline?: { label: string; root: string },
): Promise<string[]> => {
  process.stderr.write(`local server: ${seconds} s of autocannon per request and server...\n`)
  const servers = [await start('this checkout', repoRoot)]
  if (baseline) servers.push(await start(baseline.label, baseline.root))
  const lines = [
    `Local server (\`npm start\`'s startLocal, in-process, :memory:), autocannon (a worker thread) 10 connections × ${seconds} s on loopback:`,
    '',
    '| request | server | requests/s | p50 | p99 | non-2xx |',
    '|---|---|---|---|---|---|',
  ]
  try {
    for (const server of servers) {
      for (let index = 0; index < 30; index += 1) {
        await fetch(`${server.baseUrl}/pets`, { method: 'POST', headers, body })
      }
    }
    const scripts = requestScripts()
    for (const route of ROUTES) {
      // The request its folder declares (`bench.local`), with the route's method.
      const request = OPERATION_FIXTURES[route.operationId].bench.local
      for (const server of servers) {
        const result = await autocannon({
          url: request.path.includes(NEW_PET) ? server.baseUrl : `${server.baseUrl}${request.path}`,
          headers,
          ...(request.path.includes(NEW_PET)
            ? petOfItsOwn(
                route.method,
                `${new URL(server.baseUrl).pathname}${request.path}`,
                scripts,
              )
            : { method: route.method, ...(request.body ? { body: request.body } : {}) }),
          connections: 10,
          duration: seconds,
          // Its own thread, as a developer's load test is its own process: the server's thread
          // does only the server's work.
          workers: 1,
        })
        if (result.non2xx > 0 || result.errors > 0) {
          throw new Error(
            `${route.operationId} on ${server.label}: ${result.non2xx} non-2xx answers, ${result.errors} errors`,
          )
        }
        lines.push(
          `| ${route.method} ${request.path} (${route.operationId}) | ${server.label} | ${result.requests.average.toFixed(0)} | ${result.latency.p50} ms | ${result.latency.p99} ms | ${result.non2xx} |`,
        )
      }
    }
  } finally {
    for (const server of servers) await server.stop()
  }
  return lines
}
