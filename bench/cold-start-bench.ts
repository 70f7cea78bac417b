import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import { ADDRESS_BLOCK_OPERATION } from '#functions/address-block/address-block-dependencies.ts'
import { ADDRESS_BLOCK_ENTRY } from '#functions/function-entries.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { BUNDLE_FILE, FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'
import { routeOf } from '#shared/config/routes-config.ts'
import { restEvent, tokenAuthorizerEvent } from '#test/support/api-gateway-events.ts'
import { backgroundBudgetProblems, budgetProblems } from './bench-budgets.ts'
import { percentile } from './bench-stats.ts'
import { type CostInput, costSection, syncCostSection } from './cost-estimate.ts'
import {
  type BundleFacts,
  baselineOf,
  deployedBackgroundBundle,
  deployedFunctions,
  floorsFor,
  type Operation,
  type Subject,
} from './support/bench-subjects.ts'
import { cpuProfileSummary, profileName } from './support/cpu-profile-summary.ts'
import { BENCH_API_KEY } from './support/fake-dynamo-http.ts'
import { localThroughput } from './support/local-throughput.ts'

/**
 * `npm run bench`: what a cold start and an invocation cost, per function, against a floor per
 * operation (a bare handler making only that operation's SDK call), and the local server's
 * throughput. Functions are measured as deployed: the production stage's bundles from a real
 * synthesis (cdk.out assets) started with the template's environment (NODE_OPTIONS included).
 * Floors are bundled with the same esbuild options (infra/config/bundling-config.ts).
 *
 * - init: a cold start as the caller waits for it: from the start of a fresh `node` process to
 *   the end of the first invocation (import, module-scope setup, first call), median of
 *   INIT_RUNS, minus a bare `node` start measured the same way; runs interleaved (paired). And
 *   the instructions it executes, counted once under valgrind (BENCH_INSTRUCTIONS=0: not).
 * - peak RSS and Node built-in modules loaded: after importing and one invocation.
 * - warm: per-invocation time over WARM_INVOCATIONS in one process, DynamoDB's HTTP answered in
 *   memory (bench/support/fake-dynamo-http.ts), so SDK serialisation, middy, zod and the rate
 *   limiter all run; DynamoDB calls, request units and round trips are counted at that HTTP layer.
 *
 * Deterministic figures are checked against bench/bench-budgets.ts, timings only printed.
 * `--short` (`.ci/run`): fewer samples, the same code paths; it also fails when the cost table it
 * writes into docs/performance.md was not already there. `BENCH_BASELINE=<git ref>` measures that
 * commit's functions and local server in the same run, for a before and after.
 */

const SHORT = process.argv.includes('--short')
const INIT_RUNS = Number(process.env.BENCH_INIT_RUNS ?? (SHORT ? 3 : 20))
// A multiple of 50: createPet reserves ids 50 at a time, so its calls per request are exact.
const WARM_INVOCATIONS = Number(process.env.BENCH_WARM_INVOCATIONS ?? (SHORT ? 500 : 10_000))
/** Invocations before the timed ones (JIT, connection and SDK caches warm). */
const WARM_UP = SHORT ? 100 : 500
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? (SHORT ? 1 : 5))
const BASELINE = process.env.BENCH_BASELINE?.trim() || undefined
/** Where each init run writes a V8 CPU profile of its start and first invocation, when set. */
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR?.trim() || undefined
const PERFORMANCE_DOC = join(REPO_ROOT, 'docs/performance.md')

const work = mkdtempSync(join(tmpdir(), 'petstore-bench-'))

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

const started = performance.now()
const log = (message: string) =>
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)} s] ${message}\n`)

/** One event per operation (a route without one fails the type-check). */
const eventsFile = (operation: Operation): string => {
  // Each route's event as its folder declares it (`bench.event`), the authorizer's here.
  const events =
    operation === 'authorizer'
      ? [{ ...tokenAuthorizerEvent(), authorizationToken: `Bearer ${BENCH_API_KEY}` }]
      : [
          restEvent({
            method: routeOf(operation).method,
            resource: routeOf(operation).path,
            ...OPERATION_FIXTURES[operation].bench.event,
          }),
        ]
  const file = join(work, `events-${operation}.json`)
  writeFileSync(file, JSON.stringify(events))
  return file
}

const childScript = join(work, 'bench-child.mjs')

/** What each invocation of a subject must answer (bench-child.ts stops on anything else). */
const successOf = (operation: Operation): number | 'Allow' =>
  operation === 'authorizer' ? 'Allow' : routeOf(operation).successStatus

/**
 * Instructions a start executes, counted by valgrind's callgrind (every thread's): the same within
 * about 0.1% run after run, whatever else the machine does, where its timings vary by a fifth.
 */
const VALGRIND = ['--tool=callgrind', '--callgrind-out-file=/dev/null', '--smc-check=all-non-file']
const HAVE_VALGRIND = spawnSync('valgrind', ['--version']).status === 0
/** On unless BENCH_INSTRUCTIONS=0; `.ci/run` requires valgrind (the budgets check the counts). */
const COUNT_INSTRUCTIONS = process.env.BENCH_INSTRUCTIONS !== '0' && HAVE_VALGRIND
if (process.env.BENCH_REQUIRE_VALGRIND && !COUNT_INSTRUCTIONS) {
  throw new Error('BENCH_REQUIRE_VALGRIND: valgrind must count init instructions here')
}

/** The command line of a child run, and the file its result goes to. */
const childRun = (
  mode: 'bare' | 'init' | 'warm',
  subject: Subject | undefined,
  valgrind: boolean,
) => {
  const resultFile = join(work, `result-${randomUUID()}.json`)
  const job = {
    mode,
    operation: subject?.operation,
    success: subject ? successOf(subject.operation) : undefined,
    bundle: subject ? join(subject.dir, BUNDLE_FILE) : '',
    eventsFile: subject ? eventsFile(subject.operation) : '',
    invocations: WARM_INVOCATIONS,
    warmUp: WARM_UP,
    resultFile,
  }
  const profile =
    CPU_PROF_DIR && subject && mode === 'init' && !valgrind
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${CPU_PROF_DIR}`,
          `--cpu-prof-name=${profileName(subject.label)}__${randomUUID()}.cpuprofile`,
          '--cpu-prof-interval=100',
        ]
      : []
  const node = [process.execPath, ...profile, childScript, JSON.stringify(job)]
  const [command, ...args] = valgrind ? ['valgrind', ...VALGRIND, ...node] : node
  const env = subject
    ? { ...LAMBDA_ENV, ...subject.env, AWS_LAMBDA_FUNCTION_MEMORY_SIZE: `${subject.memoryMb}` }
    : LAMBDA_ENV
  /** The child's result, with the instructions valgrind counted when it ran under it. */
  const resultOf = (status: number | null, stderr: string) => {
    if (status !== 0)
      throw new Error(`${subject?.label ?? 'bare'} ${mode} failed:\n${stderr.slice(-2000)}`)
    const result = JSON.parse(readFileSync(resultFile, 'utf8')) as Record<string, unknown>
    rmSync(resultFile)
    const collected = stderr.match(/Collected : (\d+)/)?.[1]
    return collected ? { ...result, instructions: Number(collected) } : result
  }
  return { command: command as string, args, env, resultOf }
}

const runChild = (mode: 'bare' | 'init' | 'warm', subject: Subject | undefined) => {
  const { command, args, env, resultOf } = childRun(mode, subject, false)
  const run = spawnSync(command, args, {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  })
  return resultOf(run.status, run.stderr)
}

/** Instructions of each start, two valgrind runs at a time (counts, not times: they can share). */
const countInstructions = async (subjects: (Subject | undefined)[]) => {
  const counts: number[] = []
  const queue = subjects.map((subject, index) => ({ subject, index }))
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { command, args, env, resultOf } = childRun(
        next.subject ? 'init' : 'bare',
        next.subject,
        true,
      )
      const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
      })
      const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
      const count = Number(resultOf(status, stderr).instructions)
      if (!Number.isFinite(count)) {
        throw new Error(`valgrind counted no instructions for ${next.subject?.label ?? 'bare'}`)
      }
      counts[next.index] = count
    }
  }
  await Promise.all([worker(), worker()])
  return counts
}

interface CallTally {
  calls: number
  readUnits: number
  writeUnits: number
}

const medianOf = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )
const ratio = (value: number, floor: number) => `${(value / floor).toFixed(2)}x`

/**
 * Whose instructions are counted: every subject in full mode; in short mode (CI) only what the
 * budgets compare, each function and its floor plus the limiter write (the authorizer: its floor).
 */
const countedSubjects = (subjects: Subject[]) =>
  SHORT
    ? subjects.filter(
        (subject) =>
          subject.kind === 'function' ||
          subject.kind === 'floor + limiter write' ||
          (subject.kind === 'floor' && subject.operation === 'authorizer'),
      )
    : subjects

/** Runs every subject (init interleaved, then warm) and returns each one's figures. */
const measure = async (subjects: Subject[], facts: Map<string, BundleFacts>) => {
  log(`init: ${INIT_RUNS} paired runs of ${subjects.length} bundles and a bare node...`)
  const initMs = new Map<string, number[]>([['bare', []]])
  const push = (map: Map<string, number[]>, label: string, value: unknown) =>
    map.set(label, [...(map.get(label) ?? []), Number(value)])
  const rssKb = new Map<string, number[]>()
  const builtins = new Map<string, number>()
  for (let run = 0; run < INIT_RUNS; run += 1) {
    const bareRun = runChild('bare', undefined)
    push(initMs, 'bare', bareRun.readyMs)
    for (const subject of subjects) {
      const result = runChild('init', subject)
      push(initMs, subject.label, result.readyMs)
      rssKb.set(subject.label, [...(rssKb.get(subject.label) ?? []), Number(result.maxRssKb)])
      builtins.set(
        subject.label,
        Math.max(builtins.get(subject.label) ?? 0, Number(result.builtinModules)),
      )
    }
  }
  const instructions = new Map<string, number>()
  if (!COUNT_INSTRUCTIONS)
    log('init instructions not counted (no valgrind, or BENCH_INSTRUCTIONS=0)')
  else {
    log('init under valgrind: one run of each bundle and a bare node...')
    const counted = countedSubjects(subjects)
    const counts = await countInstructions([undefined, ...counted])
    instructions.set('bare', counts[0] as number)
    for (const [index, subject] of counted.entries()) {
      instructions.set(subject.label, counts[index + 1] as number)
    }
  }
  const bare = medianOf(initMs.get('bare') ?? [])
  log(`warm: ${WARM_INVOCATIONS} invocations per bundle...`)
  const warm = new Map(subjects.map((subject) => [subject.label, runChild('warm', subject)]))
  const figures = (subject: Subject) => {
    const result = warm.get(subject.label) ?? {}
    const tallies = (result.calls ?? {}) as Record<string, CallTally>
    const perRequest = (pick: (tally: CallTally) => number) =>
      Object.values(tallies).reduce((sum, tally) => sum + pick(tally), 0) / WARM_INVOCATIONS
    const bundle = facts.get(subject.label) as BundleFacts
    return {
      bundleBytes: bundle.bytes,
      bundledModules: bundle.modules,
      builtinModules: builtins.get(subject.label) ?? 0,
      initMs: medianOf(initMs.get(subject.label) ?? []) - bare,
      /** Millions of instructions, minus the bare start's; NaN when not counted. */
      initInstructionsM:
        ((instructions.get(subject.label) ?? Number.NaN) - (instructions.get('bare') ?? 0)) / 1e6,
      rssMb: medianOf(rssKb.get(subject.label) ?? []) / 1024,
      medianUs: Number(result.medianUs),
      p99Us: Number(result.p99Us),
      callsPerRequest: Object.fromEntries(
        Object.entries(tallies).map(([name, tally]) => [name, tally.calls / WARM_INVOCATIONS]),
      ),
      calls: perRequest((tally) => tally.calls),
      readUnits: perRequest((tally) => tally.readUnits),
      writeUnits: perRequest((tally) => tally.writeUnits),
      roundTripsPerRequest: Number(result.roundTrips) / WARM_INVOCATIONS,
      logBytes: Math.round(Number(result.logBytes) / WARM_INVOCATIONS),
    }
  }
  return { bare, counted: instructions.size > 0, figures }
}

type Figures = ReturnType<Awaited<ReturnType<typeof measure>>['figures']>

const row = (label: string, f: Figures, vs?: { floor: Figures; limited?: Figures }) => {
  const calls = Object.entries(f.callsPerRequest)
    .map(([name, count]) => `${name} ${count.toFixed(2)}`)
    .join(', ')
  const cell = (text: string, value: number, floor?: number) =>
    floor === undefined ? text : `${text} (${ratio(value, floor)})`
  const against = vs?.limited ?? vs?.floor
  return `| ${label} | ${cell(`${(f.bundleBytes / 1024).toFixed(1)} KB`, f.bundleBytes, vs?.floor.bundleBytes)} | ${f.bundledModules} / ${f.builtinModules} | ${cell(`${f.initMs.toFixed(1)} ms`, f.initMs, against?.initMs)} | ${Number.isNaN(f.initInstructionsM) ? 'not counted' : cell(`${f.initInstructionsM.toFixed(0)} M`, f.initInstructionsM, against?.initInstructionsM)} | ${f.rssMb.toFixed(1)} MB | ${cell(`${f.medianUs.toFixed(0)} µs`, f.medianUs, against?.medianUs)} | ${f.p99Us.toFixed(0)} µs | ${f.calls.toFixed(2)} (${calls}); ${f.roundTripsPerRequest.toFixed(2)} round trips |`
}

const main = async (): Promise<number> => {
  const facts = new Map<string, BundleFacts>()
  const functions = await deployedFunctions({ root: REPO_ROOT, work }, facts)
  const floors = await floorsFor(functions, work, facts)
  const baseline = BASELINE ? await baselineOf(BASELINE, work, facts) : undefined
  await build({
    entryPoints: [join(REPO_ROOT, 'bench/support/bench-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: FUNCTION_BUNDLING.target,
    outfile: childScript,
    logLevel: 'warning',
  })
  const subjects = [...functions, ...floors, ...(baseline?.subjects ?? [])]
  const { bare, counted, figures } = await measure(subjects, facts)

  const lines = [
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; bare node start ${bare.toFixed(1)} ms (median of ${INIT_RUNS})${counted ? '; init instructions counted by valgrind (callgrind), one run each' : ''}; warm figures over ${WARM_INVOCATIONS} invocations${SHORT ? ' (short mode)' : ''}. Ratios: bundle to the floor; init and warm to the floor plus the limiter write (the authorizer: to its floor).`,
    '',
    '| function | bundle | modules bundled / built-ins loaded | init (minus bare node) | init instructions (minus bare node) | peak RSS | warm median | warm p99 | DynamoDB calls / request |',
    '|---|---|---|---|---|---|---|---|---|',
  ]
  const problems: string[] = []
  const costInputs: CostInput[] = []
  for (const fn of functions) {
    const of = (kind: Subject['kind']) =>
      subjects.find((s) => s.operation === fn.operation && s.kind === kind)
    const f = figures(fn)
    const floor = figures(of('floor') as Subject)
    const limitedSubject = of('floor + limiter write')
    const limited = limitedSubject ? figures(limitedSubject) : undefined
    lines.push(row(fn.label, f, { floor, limited }))
    const before = of('baseline')
    if (before) lines.push(row(before.label, figures(before), { floor, limited }))
    lines.push(row(`${fn.operation} floor`, floor))
    if (limited) lines.push(row(`${fn.operation} floor + limiter write`, limited))
    const against = limited ?? floor
    const initInstructionsRatio = Number.isNaN(f.initInstructionsM)
      ? undefined
      : f.initInstructionsM / against.initInstructionsM
    problems.push(...budgetProblems(fn.operation, { ...f, initInstructionsRatio }))
    log(
      `${fn.operation}: ${f.bundleBytes} B (${ratio(f.bundleBytes, floor.bundleBytes)} the floor), ${f.bundledModules} modules, ${f.builtinModules} built-ins, calls ${JSON.stringify(f.callsPerRequest)}, ${f.roundTripsPerRequest} round trips, ${f.readUnits} RRU, ${f.writeUnits} WRU, ${f.logBytes} log bytes per request`,
    )
    costInputs.push({
      operation: fn.operation,
      memoryMb: fn.memoryMb,
      roundTrips: f.roundTripsPerRequest,
      ...f,
    })
  }
  const background = await deployedBackgroundBundle(
    work,
    ADDRESS_BLOCK_OPERATION,
    ADDRESS_BLOCK_ENTRY,
  )
  problems.push(
    ...backgroundBudgetProblems(ADDRESS_BLOCK_OPERATION, {
      bundleBytes: background.bytes,
      bundledModules: background.modules,
    }),
  )
  lines.push(
    '',
    `Background functions (bundles only): ${ADDRESS_BLOCK_OPERATION} ${(background.bytes / 1024).toFixed(1)} KB, ${background.modules} modules.`,
  )
  log(`${ADDRESS_BLOCK_OPERATION}: ${background.bytes} B, ${background.modules} modules`)
  lines.push(
    '',
    ...(await localThroughput(
      REPO_ROOT,
      LOAD_SECONDS,
      baseline && BASELINE ? { label: BASELINE, root: baseline.root } : undefined,
    )),
  )
  if (CPU_PROF_DIR) {
    const against = (fn: Subject) =>
      (
        subjects.find((s) => s.operation === fn.operation && s.kind === 'floor + limiter write') ??
        subjects.find((s) => s.operation === fn.operation && s.kind === 'floor')
      )?.label ?? ''
    const pairs = functions.map((fn) => ({ label: fn.label, against: against(fn) }))
    lines.push('', ...cpuProfileSummary(CPU_PROF_DIR, pairs))
  }
  process.stdout.write(`${lines.join('\n')}\n`)

  const cost = costSection(costInputs)
  // Rewritten either way; in short mode (CI) a rewrite means the committed page was stale.
  const state = syncCostSection(PERFORMANCE_DOC, cost)
  log(`cost estimate in docs/performance.md: ${state}`)
  if (SHORT && state === 'written') {
    problems.push(
      'docs/performance.md: its cost estimate did not match the counts and prices; rewritten, commit it',
    )
  }
  if (problems.length > 0) {
    log(
      `\nbudgets (each operation's bench.budget in functions/<fn>/<fn>-fixtures.ts, the authorizer's in bench/bench-budgets.ts) broken:\n- ${problems.join('\n- ')}`,
    )
    return 1
  }
  log('budgets: all kept')
  return 0
}

try {
  process.exitCode = await main()
} finally {
  rmSync(work, { recursive: true, force: true })
}
