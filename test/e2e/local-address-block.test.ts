import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { EDGE_ANSWERS } from '#shared/edge/edge-rules-config.ts'
import { heldTimers } from '#test/support/held-timers.ts'
import { type InProcessServer, startInProcessServer } from '#test/support/local-server.ts'

/**
 * The automatic block on the local emulation (docs/local-server.md, "Local hardening"): the local
 * gateway writes its access log, the subscription delivers the unauthorized lines to the
 * address-block function's own handler, which counts them in its table and writes the local
 * WAF's block lists through the WAF API (lock tokens and all); the local edge reads those lists.
 * The time is the test's (Date, faked), and no timer fires: the test delivers the log and runs the
 * minute's reconcile itself, so the block's start and end are exact.
 */
const KEY = 'e2e-enterprise-autoblock-0123456'
const RATE = 20
const BLOCK_MINUTES = 10
/** The test's time: Date itself, so a function's bundle (`npm run test:bundles`) follows it too. */
const advance = (ms: number) => vi.setSystemTime(Date.now() + ms)

let server: InProcessServer
let base: URL

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Date.UTC(2026, 10, 22, 12, 0, 5))
  server = await startInProcessServer(
    { PETSTORE_API_KEYS: `enterprise:${KEY}`, PETSTORE_CORS_ORIGIN: 'https://app.example.com' },
    {
      clock: () => Date.now(),
      timers: heldTimers(),
      edgeNumbers: { wafAutoBlockUnauthorizedPerMinute: RATE, wafAutoBlockMinutes: BLOCK_MINUTES },
      wrongKeysBeforeDelay: 1_000,
      addressBlockIntervalMs: 0,
    },
  )
  base = new URL(server.baseUrl)
})
afterAll(async () => {
  await server?.stop()
  vi.useRealTimers()
})

const get = (
  from: string,
  authorization?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        path: '/v1/pets?limit=1',
        localAddress: from,
        headers: authorization ? { Authorization: authorization } : {},
      },
      (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString()
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end()
  })

const wrongKeys = async (from: string, count: number, first = 0) => {
  const answers = []
  for (let n = first; n < first + count; n += 1) {
    answers.push((await get(from, `Bearer wrong-${n}-0123456789abcdef`)).status)
  }
  return answers
}

describe('the automatic block, locally', () => {
  it('blocks an address over the rate as a whole once its lines reach the function, and unblocks it when its time is over', async () => {
    const attacker = '127.0.0.2'
    expect(new Set(await wrongKeys(attacker, RATE))).toEqual(new Set([401]))
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.blocked(attacker)).toBe(false)
    // One more: still answered (the block waits for the access log's delivery), then blocked.
    expect(await wrongKeys(attacker, 1, RATE)).toEqual([401])
    expect(server.addressBlock.blocked(attacker)).toBe(false)
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.blocked(attacker)).toBe(true)
    expect(server.addressBlock.waf.addresses(server.addressBlock.ipSets.ipv4)).toEqual([
      `${attacker}/32`,
    ])
    // Its valid key too, with the web ACL's answer (readable by a page: the CORS headers).
    const refused = await get(attacker, `Bearer ${KEY}`)
    expect(refused.status).toBe(429)
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'rate_limited',
      message: EDGE_ANSWERS.addressBlockedAutomatically.message,
    })
    expect(refused.headers).toMatchObject({
      'retry-after': String(BLOCK_MINUTES * 60),
      'access-control-allow-origin': 'https://app.example.com',
    })
    // Another address with the same key is served.
    expect((await get('127.0.0.3', `Bearer ${KEY}`)).status).toBe(200)
    // The minute's reconcile keeps it until its time is over, then takes it off the list. A
    // bundle's Date follows this test's by an offset taken at each invoke and then runs on in real
    // time (local/bundles/lambda-runtime-child.mjs), so its runs read a few real milliseconds
    // later than the test's frozen time: a second either side of the end, not the end itself.
    advance(BLOCK_MINUTES * 60_000 - 1_000)
    await server.addressBlock.reconcile()
    expect(server.addressBlock.blocked(attacker)).toBe(true)
    advance(2_000)
    await server.addressBlock.reconcile()
    expect(server.addressBlock.blocked(attacker)).toBe(false)
    expect((await get(attacker, `Bearer ${KEY}`)).status).toBe(200)
  })

  it('never blocks the exempt address (the machine’s own 127.0.0.1), and an operator lifts a block at once', async () => {
    advance(60_000)
    expect(new Set(await wrongKeys('127.0.0.1', RATE + 5))).toEqual(new Set([401]))
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.blocked('127.0.0.1')).toBe(false)
    expect((await get('127.0.0.1', `Bearer ${KEY}`)).status).toBe(200)

    await wrongKeys('127.0.0.4', RATE + 1)
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.blocked('127.0.0.4')).toBe(true)
    await server.addressBlock.lift(['127.0.0.4'])
    expect(server.addressBlock.blocked('127.0.0.4')).toBe(false)
    expect((await get('127.0.0.4', `Bearer ${KEY}`)).status).toBe(200)
  })

  it('counts only what reaches the gateway: requests the edge refuses are not in the access log', async () => {
    advance(60_000)
    const attacker = '127.0.0.5'
    await wrongKeys(attacker, RATE + 1)
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.blocked(attacker)).toBe(true)
    // While blocked its requests never reach the gateway: nothing more is counted or written.
    const before = server.addressBlock.waf.addresses(server.addressBlock.ipSets.ipv4)
    expect((await wrongKeys(attacker, 5, 100)).every((status) => status === 429)).toBe(true)
    await server.addressBlock.deliverLog()
    expect(server.addressBlock.waf.addresses(server.addressBlock.ipSets.ipv4)).toEqual(before)
  })
})
