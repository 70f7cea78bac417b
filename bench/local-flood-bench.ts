/**
 * A valid key's latency on the local server while another address floods it with random wrong
 * keys (docs/local-server.md, "Local hardening"). The server as `npm start` runs it (the real
 * gateway, authorizer, key mirror and functions on the embedded DynamoDB); the customer sends
 * sequential GET /v1/pets from 127.0.0.3, the flood comes from 127.0.0.2 on FLOOD_CONNECTIONS
 * keep-alive connections, each with a fresh well-formed key. Printed for two servers: the
 * default one (an address past 30 wrong keys a minute is answered from the authorizer cache
 * alone) and one that never refuses an address, where every wrong key runs the authorizer and
 * reads the key mirror, as each one did from a refused address before.
 * Run: npx tsx bench/local-flood-bench.ts [requests per measurement]
 */
import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'
import { percentile } from './bench-stats.ts'

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

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  )

const p90 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    90,
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

/**
 * The flood, in a thread of its own (an attacker is another machine: its client work must not
 * run on the server's event loop): random wrong keys from 127.0.0.2 until stopped, counted by
 * the status of their answers.
 */
const FLOOD = `
const { parentPort, workerData } = require('node:worker_threads')
const { Agent, request } = require('node:http')
const { randomBytes } = require('node:crypto')
const agent = new Agent({ keepAlive: true, localAddress: '127.0.0.2' })
const statuses = {}
let running = true
parentPort.on('message', () => { running = false })
const get = () => new Promise((resolve) => {
  const req = request(workerData.url, { agent, headers: { authorization: 'Bearer ' + randomBytes(30).toString('base64url') } }, (res) => {
    res.resume()
    res.on('end', () => resolve(res.statusCode))
  })
  req.on('error', () => resolve(0))
  req.end()
})
const loop = async () => { while (running) { const status = await get(); statuses[status] = (statuses[status] || 0) + 1 } }
Promise.all(Array.from({ length: workerData.connections }, loop)).then(() => {
  agent.destroy()
  parentPort.postMessage(statuses)
})
`

const flood = (url: URL) => {
  const worker = new Worker(FLOOD, {
    eval: true,
    workerData: { url: url.href, connections: FLOOD_CONNECTIONS },
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

const measure = async (label: string, failedAuthLimit?: number) => {
  const server: InProcessServer = await startInProcessServer(
    {},
    failedAuthLimit === undefined ? {} : { failedAuthLimit },
  )
  try {
    const url = new URL(`${server.baseUrl}/pets?limit=1`)
    const key = server.keys.created.find((entry) => entry.plan === 'enterprise')?.key as string
    await customer(url, key) // warm-up
    await customer(url, key)
    const quiet = await customer(url, key)
    const running = flood(url)
    const busyStarted = performance.now()
    const busy = await customer(url, key)
    const busySeconds = (performance.now() - busyStarted) / 1000
    const unloaded = median(quiet)
    const loaded = median(busy)
    const { statuses, seconds } = await running.stop()
    const sent = Object.values(statuses).reduce((sum, count) => sum + count, 0)
    const authorized = statuses[401] ?? 0
    console.log(
      `${label}\n  valid key from 127.0.0.3: median ${unloaded.toFixed(2)} ms unloaded, ${loaded.toFixed(2)} ms during the flood (${(loaded / unloaded).toFixed(2)}x; ${requests} requests in ${busySeconds.toFixed(1)} s); p90 ${p90(quiet).toFixed(2)} and ${p90(busy).toFixed(2)} ms, slowest ${Math.max(...quiet).toFixed(0)} and ${Math.max(...busy).toFixed(0)} ms\n  flood from 127.0.0.2: ${sent} wrong keys in ${seconds.toFixed(1)} s (${Math.round(sent / seconds)}/s); ${authorized} answered 401 after an authorizer run and a key-mirror read, ${statuses[429] ?? 0} answered 429 without either`,
    )
  } finally {
    await server.stop()
  }
}

await measure('default (an address past 30 wrong keys a minute: authorizer cache only)')
await measure(
  'never refusing an address (every wrong key runs the authorizer)',
  Number.MAX_SAFE_INTEGER,
)
