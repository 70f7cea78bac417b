/**
 * A valid key's latency on the local server while another address floods it, and how long the
 * local emulation of the automatic block takes (docs/local-server.md, "Local hardening"). The
 * server as `npm start` runs it (the real gateway and edge, authorizer, key mirror and functions
 * on the embedded DynamoDB); the customer sends sequential GET /v1/pets from 127.0.0.3, the flood
 * comes from 127.0.0.2 on FLOOD_CONNECTIONS keep-alive connections, from a thread of its own.
 *
 * Floods: random wrong keys; CORS preflights of /v1/pets; OPTIONS of a path that is no resource.
 * Each on two servers, in this one run: the default one (the edge's ceilings, and its delays on
 * preflights and wrong keys) and one without an edge (no ceiling, no delay: every preflight
 * answered at once and every wrong key read, as before either existed). The figures are p50
 * ratios of the customer's latency during the flood to its latency before it (timings depend on
 * the machine and its load: the bench asserts nothing, it prints them with the load average).
 *
 * Then the automatic block: random wrong keys from 127.0.0.2 on a server whose wrong-key delay
 * is off (so one address can reach the rate at all), its block lasting a minute, reconciled every
 * 5 s: the time from the flood's start to the block, and from the block to its end.
 *
 * Run: npx tsx bench/local-flood-bench.ts [requests per measurement]
 */
import { Agent, request } from 'node:http'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import { localEdgeNumbers } from '#local/edge/local-edge.ts'
import type { StartLocalOptions } from '#local/local-server.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import { percentile } from './bench-stats.ts'

// The functions' logs (every wrong key is a "Rejected API key" line) would bury the figures.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT'

const requests = Number(process.argv[2] ?? 400)
const FLOOD_CONNECTIONS = 32

const get = (agent: Agent, url: URL, authorization: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })

const sortedPercentile = (values: number[], p: number) =>
  percentile(
    [...values].sort((a, b) => a - b),
    p,
  )

/** Sequential requests of the valid key from 127.0.0.3: their durations in ms. */
const customer = async (url: URL, key: string): Promise<number[]> => {
  const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.3' })
  const durations: number[] = []
  for (let i = 0; i < requests; i += 1) {
    const started = performance.now()
    const status = await get(agent, url, `Bearer ${key}`)
    durations.push(performance.now() - started)
    if (status !== 200) throw new Error(`the valid key got ${status}`)
  }
  agent.destroy()
  return durations
}

type FloodKind = 'wrong keys' | 'preflights' | 'OPTIONS elsewhere'

/**
 * The flood, in a thread of its own (an attacker is another machine: its client work must not
 * run on the server's event loop), from 127.0.0.2 until stopped, counted by the status of its
 * answers.
 */
const FLOOD = `
const { parentPort, workerData } = require('node:worker_threads')
const { Agent, request } = require('node:http')
const { randomBytes } = require('node:crypto')
const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' })
const statuses = {}
let running = true
parentPort.on('message', () => { running = false })
const options = () => {
  if (workerData.kind === 'wrong keys') {
    return { url: workerData.url, method: 'GET', headers: { authorization: 'Bearer ' + randomBytes(30).toString('base64url') } }
  }
  if (workerData.kind === 'preflights') {
    return { url: workerData.url, method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } }
  }
  return { url: workerData.elsewhere, method: 'OPTIONS', headers: {} }
}
const send = () => new Promise((resolve) => {
  const { url, method, headers } = options()
  const req = request(url, { agent, method, headers }, (res) => {
    res.resume()
    res.on('end', () => resolve(res.statusCode))
  })
  req.on('error', () => resolve(0))
  req.end()
})
const loop = async () => { while (running) { const status = await send(); statuses[status] = (statuses[status] || 0) + 1 } }
Promise.all(Array.from({ length: workerData.connections }, loop)).then(() => {
  agent.destroy()
  parentPort.postMessage(statuses)
})
`

const flood = (kind: FloodKind, url: URL) => {
  const worker = new Worker(FLOOD, {
    eval: true,
    workerData: {
      kind,
      url: url.href,
      elsewhere: new URL('/v1/no-such-resource', url).href,
      connections: FLOOD_CONNECTIONS,
    },
  })
  const started = performance.now()
  const done = new Promise<Record<string, number>>((resolve) => worker.once('message', resolve))
  return {
    stop: async () => {
      const seconds = (performance.now() - started) / 1000
      worker.postMessage('stop')
      const statuses = await done
      await worker.terminate()
      return { statuses, seconds }
    },
  }
}

/** A server without an edge: no ceiling refuses and no delay holds back anything. */
const NO_EDGE: StartLocalOptions = {
  wrongKeysBeforeDelay: Number.MAX_SAFE_INTEGER,
  edgeNumbers: {
    wafKeylessPer5Minutes: 2_000_000_000,
    wafKeyedPerAddressPerMinute: 2_000_000_000,
    largestPlanPerMinute: 200_000_000,
    wafAutoBlockUnauthorizedPerMinute: 2_000_000_000,
  },
}

const enterpriseKey = (server: InProcessServer) =>
  server.keys.created.find((entry) => entry.plan === 'enterprise')?.key as string

interface FloodFigures {
  ratio: number
  line: string
}

const measure = async (kind: FloodKind, edge: boolean): Promise<FloodFigures> => {
  const server = await startInProcessServer({ PETSTORE_CORS_ORIGIN: '*' }, edge ? {} : NO_EDGE)
  try {
    const url = new URL(`${server.baseUrl}/pets?limit=1`)
    const key = enterpriseKey(server)
    await customer(url, key) // warm-up
    await customer(url, key)
    const quiet = await customer(url, key)
    const running = flood(kind, url)
    const busy = await customer(url, key)
    const { statuses, seconds } = await running.stop()
    const unloaded = sortedPercentile(quiet, 50)
    const loaded = sortedPercentile(busy, 50)
    const sent = Object.values(statuses).reduce((sum, count) => sum + count, 0)
    const answers = Object.entries(statuses)
      .map(([status, count]) => `${count} × ${status}`)
      .join(', ')
    return {
      ratio: loaded / unloaded,
      line: `| ${kind} | ${edge ? 'the edge' : 'no edge'} | ${unloaded.toFixed(2)} ms | ${loaded.toFixed(2)} ms | **${(loaded / unloaded).toFixed(2)}x** | ${sortedPercentile(quiet, 90).toFixed(2)} / ${sortedPercentile(busy, 90).toFixed(2)} ms | ${Math.round(sent / seconds)}/s (${answers}) |`,
    }
  } finally {
    await server.stop()
  }
}

/** Waits until `check` holds, polling every 5 ms; the time it took in ms. */
const until = async (check: () => boolean | Promise<boolean>, limitMs: number): Promise<number> => {
  const started = performance.now()
  while (!(await check())) {
    if (performance.now() - started > limitMs) throw new Error('not within the bench’s limit')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return performance.now() - started
}

const measureAutoBlock = async (): Promise<string[]> => {
  const server = await startInProcessServer(
    {},
    {
      wrongKeysBeforeDelay: Number.MAX_SAFE_INTEGER,
      edgeNumbers: { wafAutoBlockMinutes: 1 },
      addressBlockIntervalMs: 5_000,
    },
  )
  try {
    const url = new URL(`${server.baseUrl}/pets?limit=1`)
    const key = enterpriseKey(server)
    const attacker = '127.0.0.2'
    const started = performance.now()
    const running = flood('wrong keys', url)
    const toBlock = await until(() => server.addressBlock.blocked(attacker), 120_000)
    const { statuses, seconds } = await running.stop()
    const rate = Math.round((statuses[401] ?? 0) / (toBlock / 1000))
    const threshold = localEdgeNumbers().wafAutoBlockUnauthorizedPerMinute
    const agent = new Agent({ keepAlive: true, localAddress: attacker })
    const refused = await get(agent, url, `Bearer ${key}`)
    const blockedAt = performance.now()
    const toEnd = await until(async () => (await get(agent, url, `Bearer ${key}`)) === 200, 120_000)
    agent.destroy()
    return [
      `Automatic block on the local emulation (more than ${threshold} unauthorized answers in a minute, block 1 minute, reconcile every 5 s, log delivered every second):`,
      `- a flood of random wrong keys from ${attacker} (${rate} unauthorized answers a second, ${Math.round(((statuses[401] ?? 0) + (statuses[429] ?? 0)) / seconds)}/s answered in all): blocked ${(toBlock / 1000).toFixed(1)} s after it started; at that rate answer ${threshold + 1} came after about ${((threshold + 1) / rate).toFixed(1)} s, so the log's delivery and the function's run took about ${(toBlock / 1000 - (threshold + 1) / rate).toFixed(1)} s`,
      `- its valid key, from the blocked address: ${refused}; served again ${((blockedAt - started + toEnd) / 1000 - toBlock / 1000).toFixed(1)} s after the block began (a minute, then the next reconcile)`,
    ]
  } finally {
    await server.stop()
  }
}

const lines = [
  `Load average before: ${loadavg()
    .map((value) => value.toFixed(2))
    .join(
      ', ',
    )}; ${requests} sequential requests of an Enterprise key from 127.0.0.3 per measurement, a flood from 127.0.0.2 on ${FLOOD_CONNECTIONS} connections.`,
  '',
  '| flood | server | p50 unloaded | p50 during the flood | ratio | p90 unloaded / during | the flood (answers) |',
  '|---|---|---|---|---|---|---|',
]
for (const kind of ['wrong keys', 'preflights', 'OPTIONS elsewhere'] as const) {
  for (const edge of [true, false]) {
    const figures = await measure(kind, edge)
    lines.push(figures.line)
    process.stderr.write(`${figures.line}\n`)
  }
}
lines.push('', ...(await measureAutoBlock()))
lines.push(
  '',
  `Load average after: ${loadavg()
    .map((value) => value.toFixed(2))
    .join(', ')}`,
)
process.stdout.write(`${lines.join('\n')}\n`)
