import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { build } from 'esbuild'
import { BUNDLE_FILE, FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'
import { readLocalConfig } from '#local/local-config.ts'
import { startLocal } from '#local/local-server.ts'
import { type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { synthesizeApp } from '#test/infra/support/app-synthesis-setup.ts'
import { restEvent, tokenAuthorizerEvent } from '#test/support/api-gateway-events.ts'
import { percentile } from './bench-stats.ts'
import { BENCH_API_KEY } from './support/fake-dynamo-http.ts'

/**
 * `npm run bench`: what a cold start and an invocation cost, per function, against a floor per
 * operation (a bare handler making only that operation's SDK call), and the local server's
 * throughput. Functions are measured as deployed: the production stage's bundles from a real
 * synthesis (cdk.out assets) started with the template's environment (NODE_OPTIONS included).
 * Floors are bundled with the same esbuild options (infra/config/bundling-config.ts).
 *
 * - init: a cold start as the caller waits for it: from the start of a fresh `node` process to
 *   the end of the first invocation (import, module-scope setup, first call), median of
 *   INIT_RUNS, minus a bare `node` start measured the same way; runs interleaved (paired).
 * - peak RSS: the process's maxRSS after importing and one invocation.
 * - warm: per-invocation time over WARM_INVOCATIONS in one process, DynamoDB's HTTP answered in
 *   memory (bench/support/fake-dynamo-http.ts), so SDK serialisation, middy, zod and the rate
 *   limiter all run; the DynamoDB calls are counted at that HTTP layer.
 */
const INIT_RUNS = Number(process.env.BENCH_INIT_RUNS ?? 20)
const WARM_INVOCATIONS = Number(process.env.BENCH_WARM_INVOCATIONS ?? 10_000)
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5)

const work = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
const cleanup = [work]
/** Every function that serves a request: each route's (the route table) and the authorizer. */
const OPERATIONS: readonly Operation[] = [...ROUTES.map((route) => route.operationId), 'authorizer']
type Operation = OperationId | 'authorizer'

interface Subject {
  label: string
  operation: Operation
  dir: string
  env: Record<string, string>
}

/** Lambda's own variables, with placeholders for what only an AWS account would have. */
const LAMBDA_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_SESSION_TOKEN: 'bench',
  AWS_LAMBDA_FUNCTION_NAME: 'bench',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
  _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
  PATH: process.env.PATH ?? '',
}

const log = (message: string) => process.stderr.write(`${message}\n`)

/** The production stage's functions as synthesized: asset directory and environment. */
const deployedFunctions = (): Subject[] => {
  log('synthesizing the CDK app (bundles every function as deployed)...')
  const synthesis = synthesizeApp()
  cleanup.push(synthesis.outdir)
  if (synthesis.status !== 0) throw new Error(`cdk synth failed:\n${synthesis.stderr}`)
  const templateFile = readdirSync(synthesis.outdir).find((name) =>
    /production-api\.template\.json$/.test(name),
  )
  if (!templateFile) throw new Error('no production API template in the cloud assembly')
  const template = JSON.parse(readFileSync(join(synthesis.outdir, templateFile), 'utf8')) as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>
  }
  const subjects: Subject[] = []
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue
    const props = resource.Properties as {
      Code: { S3Key: string }
      Environment?: { Variables: Record<string, unknown> }
    }
    const variables = props.Environment?.Variables ?? {}
    const operation = variables.POWERTOOLS_SERVICE_NAME as Operation
    if (!OPERATIONS.includes(operation)) continue
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(variables)) {
      // Table names and secrets are CloudFormation references until deployed.
      env[name] = typeof value === 'string' ? value : `bench-${name.toLowerCase()}`
    }
    const asset = `asset.${props.Code.S3Key.replace(/\.zip$/, '')}`
    subjects.push({ label: operation, operation, dir: join(synthesis.outdir, asset), env })
  }
  // Every function is measured: one the template lacks is an error, never a skipped row.
  const missing = OPERATIONS.filter((operation) => !subjects.some((s) => s.operation === operation))
  if (missing.length > 0) {
    throw new Error(`no function in the production template for ${missing.join(', ')}`)
  }
  return subjects.sort((a, b) => OPERATIONS.indexOf(a.operation) - OPERATIONS.indexOf(b.operation))
}

/**
 * Each function's floor: a bare handler making only that operation's SDK calls. A route without
 * one (or without an event below) fails the type-check.
 */
const FLOOR_ENTRIES: Record<Operation, string> = {
  getPet: 'bench/floors/get-pet-floor.ts',
  listPets: 'bench/floors/list-pets-floor.ts',
  createPet: 'bench/floors/create-pet-floor.ts',
  authorizer: 'bench/floors/authorizer-floor.ts',
}

const bundle = async (entry: string, outdir: string) => {
  const { banner, ...options } = FUNCTION_BUNDLING
  await build({
    ...options,
    mainFields: [...options.mainFields],
    banner: { js: banner },
    entryPoints: [join(REPO_ROOT, entry)],
    bundle: true,
    outfile: join(outdir, BUNDLE_FILE),
    logLevel: 'warning',
  })
}

/** Floors run with their function's environment minus NODE_OPTIONS: a bare handler sets none. */
const floorsFor = async (functions: Subject[]): Promise<Subject[]> =>
  Promise.all(
    functions.map(async (fn) => {
      const dir = join(work, `floor-${fn.operation}`)
      await bundle(FLOOR_ENTRIES[fn.operation], dir)
      const { NODE_OPTIONS: _none, ...env } = fn.env
      return { label: `${fn.operation} floor`, operation: fn.operation, dir, env }
    }),
  )

/** The same floors making the rate limiter's write too (not the authorizer: it is not limited). */
const limitedFloorsOf = (floors: Subject[]): Subject[] =>
  floors
    .filter((floor) => floor.operation !== 'authorizer')
    .map((floor) => ({
      ...floor,
      label: `${floor.operation} floor + limiter write`,
      env: { ...floor.env, FLOOR_WITH_LIMITER: '1' },
    }))

const eventsFile = (operation: Operation): string => {
  const headers = { 'Content-Type': 'application/json' }
  const events: Record<Operation, unknown[]> = {
    getPet: [restEvent({ resource: '/pets/{petId}', pathParameters: { petId: '1' } })],
    listPets: [restEvent({ query: { limit: '20', status: 'available' } })],
    createPet: [
      restEvent({
        method: 'POST',
        headers,
        // A safe-integer categoryId: the floor parses with JSON.parse, which would round int64.
        body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'available' }),
      }),
    ],
    authorizer: [{ ...tokenAuthorizerEvent(), authorizationToken: `Bearer ${BENCH_API_KEY}` }],
  }
  const file = join(work, `events-${operation}.json`)
  writeFileSync(file, JSON.stringify(events[operation]))
  return file
}

const childScript = join(work, 'bench-child.mjs')

const runChild = (
  mode: 'bare' | 'init' | 'warm',
  subject: Subject | undefined,
): { result: Record<string, unknown> } => {
  const resultFile = join(work, 'result.json')
  rmSync(resultFile, { force: true })
  const job = {
    mode,
    bundle: subject ? join(subject.dir, BUNDLE_FILE) : '',
    eventsFile: subject ? eventsFile(subject.operation) : '',
    invocations: WARM_INVOCATIONS,
    resultFile,
  }
  const run = spawnSync(process.execPath, [childScript, JSON.stringify(job)], {
    env: subject ? { ...LAMBDA_ENV, ...subject.env } : LAMBDA_ENV,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  })
  if (run.status !== 0)
    throw new Error(`${subject?.label ?? 'bare'} ${mode} failed:\n${run.stderr.slice(-2000)}`)
  const result = JSON.parse(readFileSync(resultFile, 'utf8'))
  return { result }
}

const kb = (dir: string) => statSync(join(dir, BUNDLE_FILE)).size / 1024
const medianOf = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )
const ratio = (value: number, floor: number) => `${(value / floor).toFixed(2)}x`

const main = async () => {
  const functions = deployedFunctions()
  const floors = await floorsFor(functions)
  await build({
    entryPoints: [join(REPO_ROOT, 'bench/support/bench-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: FUNCTION_BUNDLING.target,
    outfile: childScript,
    logLevel: 'warning',
  })
  const limitedFloors = limitedFloorsOf(floors)
  const subjects = [...functions, ...floors, ...limitedFloors]

  log(`init: ${INIT_RUNS} paired runs of ${subjects.length} bundles and a bare node...`)
  const initMs = new Map<string, number[]>([['bare', []]])
  const rssKb = new Map<string, number[]>()
  for (let run = 0; run < INIT_RUNS; run += 1) {
    initMs.get('bare')?.push(Number(runChild('bare', undefined).result.readyMs))
    for (const subject of subjects) {
      const { result } = runChild('init', subject)
      initMs.set(subject.label, [...(initMs.get(subject.label) ?? []), Number(result.readyMs)])
      rssKb.set(subject.label, [...(rssKb.get(subject.label) ?? []), Number(result.maxRssKb)])
    }
  }
  const bare = medianOf(initMs.get('bare') ?? [])

  log(`warm: ${WARM_INVOCATIONS} invocations per bundle...`)
  const warm = new Map<string, Record<string, unknown>>()
  for (const subject of subjects) warm.set(subject.label, runChild('warm', subject).result)

  const figures = (subject: Subject) => ({
    bundleKb: kb(subject.dir),
    initMs: medianOf(initMs.get(subject.label) ?? []) - bare,
    rssMb: medianOf(rssKb.get(subject.label) ?? []) / 1024,
    medianUs: Number(warm.get(subject.label)?.medianUs),
    p99Us: Number(warm.get(subject.label)?.p99Us),
    calls: Number(warm.get(subject.label)?.callsPerRequest),
    callsByOperation: warm.get(subject.label)?.calls as Record<string, number>,
  })

  const lines = [
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; bare node start ${bare.toFixed(1)} ms (median of ${INIT_RUNS}); warm figures over ${WARM_INVOCATIONS} invocations.`,
    '',
    '| function | bundle | init (minus bare node) | peak RSS | warm median | warm p99 | DynamoDB calls / request |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const fn of functions) {
    const floor = floors.find((candidate) => candidate.operation === fn.operation) as Subject
    const f = figures(fn)
    const g = figures(floor)
    const byOperation = Object.entries(f.callsByOperation ?? {})
      .map(([name, count]) => `${name} ${(count / WARM_INVOCATIONS).toFixed(2)}`)
      .join(', ')
    lines.push(
      `| ${fn.label} | ${f.bundleKb.toFixed(0)} KB (${ratio(f.bundleKb, g.bundleKb)}) | ${f.initMs.toFixed(1)} ms (${ratio(f.initMs, g.initMs)}) | ${f.rssMb.toFixed(1)} MB (${ratio(f.rssMb, g.rssMb)}) | ${f.medianUs.toFixed(0)} µs (${ratio(f.medianUs, g.medianUs)}) | ${f.p99Us.toFixed(0)} µs | ${f.calls.toFixed(2)} (${byOperation}) |`,
      `| ${floor.label} | ${g.bundleKb.toFixed(0)} KB | ${g.initMs.toFixed(1)} ms | ${g.rssMb.toFixed(1)} MB | ${g.medianUs.toFixed(0)} µs | ${g.p99Us.toFixed(0)} µs | ${g.calls.toFixed(2)} |`,
    )
    const limited = limitedFloors.find((candidate) => candidate.operation === fn.operation)
    if (limited) {
      const h = figures(limited)
      lines.push(
        `| ${limited.label} | ${h.bundleKb.toFixed(0)} KB | ${h.initMs.toFixed(1)} ms | ${h.rssMb.toFixed(1)} MB | ${h.medianUs.toFixed(0)} µs (function: ${ratio(f.medianUs, h.medianUs)}) | ${h.p99Us.toFixed(0)} µs | ${h.calls.toFixed(2)} |`,
      )
    }
  }
  lines.push('', ...(await localThroughput()))
  process.stdout.write(`${lines.join('\n')}\n`)
}

/** The local server (same handlers, embedded DynamoDB) under autocannon on loopback. */
const localThroughput = async (): Promise<string[]> => {
  log(`local server: ${LOAD_SECONDS} s of autocannon per request...`)
  const key = 'bench-local-enterprise-0123456789abcdef'
  const server = await startLocal(
    readLocalConfig({
      PORT: '0',
      PETSTORE_DATA_DIR: ':memory:',
      PETSTORE_API_KEYS: `enterprise:${key}`,
      // Limits no load test reaches: every request takes the admitted path.
      ENTERPRISE_LIMITS: '100000000/1000000000',
    }),
  )
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const body = JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' })
  for (let index = 0; index < 30; index += 1) {
    await fetch(`${server.baseUrl}/pets`, { method: 'POST', headers, body })
  }
  // One request per operation, in route-table order.
  const requests: Record<OperationId, { path: string; body?: string }> = {
    listPets: { path: '/pets?limit=20&status=available' },
    createPet: { path: '/pets', body },
    getPet: { path: '/pets/1' },
  }
  const cases = ROUTES.map((route) => ({
    label: `${route.method} ${requests[route.operationId].path} (${route.operationId})`,
    method: route.method,
    ...requests[route.operationId],
  }))
  const lines = [
    `Local server (\`npm start\`'s startLocal, in-process, :memory:), autocannon 10 connections × ${LOAD_SECONDS} s on loopback:`,
    '',
    '| request | requests/s | p50 | p99 | non-2xx |',
    '|---|---|---|---|---|',
  ]
  try {
    for (const { label, path, method, body: payload } of cases) {
      const result = await autocannon({
        url: `${server.baseUrl}${path}`,
        method,
        headers,
        ...(payload ? { body: payload } : {}),
        connections: 10,
        duration: LOAD_SECONDS,
      })
      lines.push(
        `| ${label} | ${result.requests.average.toFixed(0)} | ${result.latency.p50} ms | ${result.latency.p99} ms | ${result.non2xx} |`,
      )
    }
  } finally {
    await server.stop()
  }
  return lines
}

try {
  await main()
} finally {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true })
}
