import { readFileSync, writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { Operation } from './bench-subjects.ts'
import {
  assertAllCallsAnswered,
  dynamoCalls,
  installFakeDynamoHttp,
  resetDynamoCalls,
  roundTrips,
} from './fake-dynamo-http.ts'

/**
 * Runs inside a fresh `node` process (bundled by the bench, so no TypeScript loader skews the
 * start): imports one function bundle as Lambda would, with DynamoDB answered in memory, then
 * either invokes it once and reports the time from process start to the end of that first
 * invocation, peak RSS and the Node built-in modules loaded by then (mode `init`), or invokes it
 * many times and reports the time per invocation, DynamoDB calls, request units and round trips
 * per request, and the log bytes a request writes (mode `warm`). `bare` imports nothing: the
 * baseline a node start costs. No deadline can fire in it, however slow the machine (the bench
 * gives functions DYNAMODB_CLIENT_LIMITS=no-deadline, and the context 24 hours), and a call the SDK
 * retries stops it: its counts are the same at any load.
 */

interface ChildJob {
  mode: 'bare' | 'init' | 'warm'
  operation: Operation
  /** What every invocation must answer: the route's success status, or the authorizer's Allow. */
  success: number | 'Allow'
  bundle: string
  eventsFile: string
  invocations: number
  /** Untimed invocations first: a multiple of 50, so createPet's id blocks stay aligned. */
  warmUp: number
  /** Where the result goes: stdout carries the function's own logs and metrics, as on Lambda. */
  resultFile: string
}

const job = JSON.parse(process.argv[2] ?? '{}') as ChildJob

const NO_DEADLINE_MS = 24 * 60 * 60 * 1_000
type Handler = (event: unknown, context: unknown) => Promise<unknown>

const context = {
  functionName: 'bench',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
  memoryLimitInMB: '512',
  awsRequestId: 'bench-request',
  logGroupName: '/aws/lambda/bench',
  logStreamName: 'bench',
  callbackWaitsForEmptyEventLoop: true,
  // A deadline that cannot fire while the bench runs: a constant function timeout let middy's
  // early-timeout 503 fire under valgrind or on a busy machine and stop the run. 24 hours, under
  // setTimeout's 2^31 - 1 ms, past which Node fires a timer at once.
  getRemainingTimeInMillis: () => NO_DEADLINE_MS,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
}

/** Node's own modules loaded so far (what a bundle's imports and first invocation pulled in). */
const builtinModulesLoaded = () =>
  (process as unknown as { moduleLoadList: string[] }).moduleLoadList.filter((entry) =>
    entry.startsWith('NativeModule '),
  ).length

/** Bytes the function writes to stdout (its logs and EMF metrics), counted and dropped. */
const stdoutBytes = { count: 0 }
process.stdout.write = ((chunk: string | Uint8Array) => {
  stdoutBytes.count += Buffer.byteLength(chunk)
  return true
}) as typeof process.stdout.write

/** Stops the bench on an answer other than success: an error path is not what it measures. */
const assertSuccess = (result: unknown): void => {
  assertAllCallsAnswered()
  const answer = result as {
    statusCode?: number
    body?: string
    policyDocument?: { Statement?: { Effect?: string }[] }
  }
  const got =
    job.operation === 'authorizer'
      ? answer.policyDocument?.Statement?.[0]?.Effect
      : answer.statusCode
  if (got !== job.success) {
    throw new Error(
      `${job.operation} answered ${got} instead of ${job.success} to the bench's event: ${String(answer.body ?? '').slice(0, 300)}`,
    )
  }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number

if (job.mode === 'bare') {
  // Process start to here: what a node start and this script cost before any bundle.
  writeFileSync(job.resultFile, JSON.stringify({ readyMs: performance.now() }))
} else {
  installFakeDynamoHttp(job.operation)
  const { handler } = (await import(pathToFileURL(job.bundle).href)) as { handler: Handler }
  const events = JSON.parse(readFileSync(job.eventsFile, 'utf8')) as unknown[]
  const eventAt = (index: number) => structuredClone(events[index % events.length])
  if (job.mode === 'init') {
    // A cold start as the caller waits for it: process start to the end of the first invocation.
    assertSuccess(await handler(eventAt(0), context))
    const readyMs = performance.now()
    writeFileSync(
      job.resultFile,
      JSON.stringify({
        readyMs,
        maxRssKb: process.resourceUsage().maxRSS,
        builtinModules: builtinModulesLoaded(),
      }),
    )
  } else {
    for (let index = 0; index < job.warmUp; index += 1) {
      assertSuccess(await handler(eventAt(index), context))
    }
    resetDynamoCalls()
    stdoutBytes.count = 0
    const samples: number[] = []
    for (let index = 0; index < job.invocations; index += 1) {
      const event = eventAt(index)
      const started = process.hrtime.bigint()
      const result = await handler(event, context)
      samples.push(Number(process.hrtime.bigint() - started) / 1000)
      assertSuccess(result)
    }
    samples.sort((a, b) => a - b)
    writeFileSync(
      job.resultFile,
      JSON.stringify({
        medianUs: quantile(samples, 0.5),
        p99Us: quantile(samples, 0.99),
        calls: Object.fromEntries(dynamoCalls),
        roundTrips: roundTrips.count,
        logBytes: stdoutBytes.count,
      }),
    )
  }
}
