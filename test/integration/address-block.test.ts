import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Context } from 'aws-lambda'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { cloudWatchLogsEvent, type LogEvent } from '#functions/address-block/access-log-events.ts'
import { addressBlockWafClient } from '#functions/address-block/address-block-dependencies.ts'
import {
  type AddressBlockResult,
  addressBlockHandler,
} from '#functions/address-block/address-block-handler.ts'
import {
  AddressBlockRepository,
  addressBlockTableDefinition,
} from '#functions/address-block/address-block-repository.ts'
import { ADDRESS_BLOCK_METRICS } from '#functions/address-block/address-block-run.ts'
import { IpSetWriter, parseIpSetRef } from '#functions/address-block/ip-set-writer.ts'
import { LocalWaf, WafApiError } from '#local/edge/local-waf.ts'
import { ensureTable } from '#local/embedded-dynamo.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/**
 * The address-block function's handler on a real DynamoDB (dynalite) and WAF's JSON API as the
 * local server serves it (local/edge/local-waf.ts over HTTP), with the SDK's WAFV2Client: counts
 * per address and minute, the block at one past the rate, the IP sets kept equal to the blocks
 * through lock tokens, blocks ended by the reconcile, lifted by an operator, never an exempted
 * address.
 */
const RATE = 5
const BLOCK_MINUTES = 10
const T0 = Date.UTC(2026, 10, 22, 12, 0, 10)

let env: DynamoTestEnv
let http: Server
let waf: LocalWaf
/** Called before each WAF call is answered (a test's way to change the set in between). */
let beforeCall: (target: string) => void = () => undefined
let endpoint: string

beforeAll(async () => {
  env = await startDynamoTestEnv()
  http = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString()
    })
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'])
      try {
        beforeCall(target)
        const answer = JSON.stringify(waf.call(target, JSON.parse(body) as Record<string, unknown>))
        res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.1' }).end(answer)
      } catch (error) {
        const refusal = error as WafApiError
        res
          .writeHead(refusal.status, { 'x-amzn-ErrorType': refusal.type })
          .end(JSON.stringify({ __type: refusal.type, message: refusal.message }))
      }
    })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => http?.close(resolve))
  await env?.close()
})

let now: number
let refs: { ipv4: string; ipv6: string }
let metrics: { name: string; value: number }[]
let handler: (event: unknown) => Promise<AddressBlockResult>

beforeEach(async () => {
  now = T0
  beforeCall = () => undefined
  waf = new LocalWaf()
  refs = {
    ipv4: waf.createIpSet('auto-ipv4', 'IPV4', 'automatic block list'),
    ipv6: waf.createIpSet('auto-ipv6', 'IPV6'),
  }
  const tableName = `test-address-blocks-${randomUUID().slice(0, 8)}`
  await ensureTable(env.client, addressBlockTableDefinition(tableName))
  const client = addressBlockWafClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  metrics = []
  const built = addressBlockHandler({
    repository: new AddressBlockRepository({ client: env.documentClient, tableName }),
    ipSets: {
      IPV4: new IpSetWriter({
        client,
        ref: parseIpSetRef(refs.ipv4),
        sleep: async () => undefined,
      }),
      IPV6: new IpSetWriter({
        client,
        ref: parseIpSetRef(refs.ipv6),
        sleep: async () => undefined,
      }),
    },
    settings: {
      unauthorizedPerMinute: RATE,
      blockMinutes: BLOCK_MINUTES,
      exempt: ['203.0.113.0/24'],
    },
    logger: fakeLogger(),
    metrics: { addMetric: (name, _unit, value) => metrics.push({ name, value }) },
    clock: () => now,
  })
  handler = (event) => built(event as never, {} as Context)
})

let sequence = 0
const unauthorized = (ip: string, count: number, at = now): LogEvent[] => {
  const first = sequence
  sequence += count
  return Array.from({ length: count }, (_, i) => ({
    id: String(first + i),
    timestamp: at,
    message: JSON.stringify({ ip, status: '401', httpMethod: 'GET', path: '/v1/pets' }),
  }))
}
const deliver = (logEvents: LogEvent[]) =>
  handler(cloudWatchLogsEvent({ messageType: 'DATA_MESSAGE', logEvents }))
const scheduled = () => handler({ source: 'aws.events', 'detail-type': 'Scheduled Event' })

describe('the address-block function', () => {
  it('blocks an address one past the rate in a minute, across deliveries, and writes it into its IP set', async () => {
    expect(await deliver(unauthorized('198.51.100.7', RATE - 1))).toMatchObject({ blocked: [] })
    expect(await deliver(unauthorized('198.51.100.7', 1))).toMatchObject({ blocked: [] })
    expect(waf.addresses(refs.ipv4)).toEqual([])
    const result = await deliver([
      ...unauthorized('198.51.100.7', 1),
      ...unauthorized('2001:db8::7', RATE + 1),
    ])
    expect(result).toMatchObject({
      kind: 'record',
      unauthorized: RATE + 2,
      blocked: expect.arrayContaining(['198.51.100.7', '2001:db8::7']),
      failures: 0,
      ipSets: { IPV4: 'updated', IPV6: 'updated' },
    })
    expect(waf.addresses(refs.ipv4)).toEqual(['198.51.100.7/32'])
    expect(waf.addresses(refs.ipv6)).toEqual(['2001:db8::7/128'])
    expect(metrics).toContainEqual({ name: ADDRESS_BLOCK_METRICS.newBlocks, value: 2 })
    // UpdateIPSet replaces every field: the set's description was sent back as it was.
    const set = waf.call('AWSWAF_20190729.GetIPSet', {
      Name: 'auto-ipv4',
      Id: refs.ipv4.split('|')[1],
      Scope: 'REGIONAL',
    }) as { IPSet: { Description: string } }
    expect(set.IPSet.Description).toBe('automatic block list')
  })

  it('counts each minute apart: the rate spread over two minutes blocks nothing', async () => {
    await deliver(unauthorized('198.51.100.8', RATE, T0))
    await deliver(unauthorized('198.51.100.8', RATE, T0 + 60_000))
    expect(waf.addresses(refs.ipv4)).toEqual([])
  })

  it('never blocks an exempted address, however many unauthorized answers it gets', async () => {
    expect(await deliver(unauthorized('203.0.113.9', RATE * 10))).toMatchObject({ blocked: [] })
    expect(waf.addresses(refs.ipv4)).toEqual([])
  })

  it('ends a block when its time is over, at the minute’s reconcile, and an operator lifts one at once', async () => {
    await deliver([
      ...unauthorized('198.51.100.9', RATE + 1),
      ...unauthorized('198.51.100.10', RATE + 1),
    ])
    expect(waf.addresses(refs.ipv4).sort()).toEqual(['198.51.100.10/32', '198.51.100.9/32'])
    now += BLOCK_MINUTES * 60_000 - 1
    expect(await scheduled()).toMatchObject({ kind: 'reconcile', active: 2, ended: [] })
    expect(await handler({ lift: ['198.51.100.10'] })).toMatchObject({
      kind: 'lift',
      lifted: ['198.51.100.10'],
      ipSets: { IPV4: 'updated' },
    })
    expect(waf.addresses(refs.ipv4)).toEqual(['198.51.100.9/32'])
    now += 1
    expect(await scheduled()).toMatchObject({ ended: ['198.51.100.9'], active: 0 })
    expect(waf.addresses(refs.ipv4)).toEqual([])
    // Nothing left to end: a set already right costs only its read.
    expect(await scheduled()).toMatchObject({ ipSets: { IPV4: 'unchanged', IPV6: 'unchanged' } })
  })

  it('reads the set again when someone else wrote it in between (WAFOptimisticLockException), and keeps what it holds equal to the blocks', async () => {
    const id = refs.ipv4.split('|')[1]
    let raced = 0
    beforeCall = (target) => {
      if (target.endsWith('UpdateIPSet') && raced < 2) {
        raced += 1
        // An operator's write between our read and our update: our lock token is now stale.
        const { LockToken } = waf.call('AWSWAF_20190729.GetIPSet', {
          Name: 'auto-ipv4',
          Id: id,
          Scope: 'REGIONAL',
        }) as { LockToken: string }
        waf.call('AWSWAF_20190729.UpdateIPSet', {
          Name: 'auto-ipv4',
          Id: id,
          Scope: 'REGIONAL',
          Addresses: ['192.0.2.1/32'],
          LockToken,
        })
      }
    }
    await deliver(unauthorized('198.51.100.11', RATE + 1))
    expect(raced).toBe(2)
    // The set is the function's: it holds the blocks and nothing else.
    expect(waf.addresses(refs.ipv4)).toEqual(['198.51.100.11/32'])
  })

  it('never fails a delivery it has counted: a WAF that refuses leaves the blocks for the next reconcile', async () => {
    beforeCall = (target) => {
      // As when the function's role lacks the permission: not retried by the SDK.
      if (target.endsWith('UpdateIPSet')) throw new WafApiError(403, 'AccessDeniedException', 'no')
    }
    const result = await deliver(unauthorized('198.51.100.12', RATE + 1))
    expect(result).toMatchObject({ blocked: ['198.51.100.12'], ipSets: { IPV4: 'failed' } })
    expect(metrics).toContainEqual({ name: ADDRESS_BLOCK_METRICS.failures, value: 1 })
    expect(waf.addresses(refs.ipv4)).toEqual([])
    beforeCall = () => undefined
    expect(await scheduled()).toMatchObject({ ipSets: { IPV4: 'updated' }, active: 1 })
    expect(waf.addresses(refs.ipv4)).toEqual(['198.51.100.12/32'])
  })

  it('loses a count rather than doubling it when its counting write fails', async () => {
    const unreachable = createDocumentClient({
      endpoint: 'http://127.0.0.1:9',
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    })
    const tableName = `test-address-blocks-${randomUUID().slice(0, 8)}`
    await ensureTable(env.client, addressBlockTableDefinition(tableName))
    const client = addressBlockWafClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    })
    const failing = addressBlockHandler({
      repository: new AddressBlockRepository({
        client: env.documentClient,
        countingClient: unreachable,
        tableName,
      }),
      ipSets: {
        IPV4: new IpSetWriter({ client, ref: parseIpSetRef(refs.ipv4) }),
        IPV6: new IpSetWriter({ client, ref: parseIpSetRef(refs.ipv6) }),
      },
      settings: { unauthorizedPerMinute: RATE, blockMinutes: BLOCK_MINUTES, exempt: [] },
      logger: fakeLogger(),
      metrics: { addMetric: () => undefined },
      clock: () => now,
    })
    const result = await failing(
      cloudWatchLogsEvent({
        messageType: 'DATA_MESSAGE',
        logEvents: unauthorized('198.51.100.13', RATE + 1),
      }),
      {} as Context,
    )
    expect(result).toMatchObject({ kind: 'record', blocked: [], failures: 1 })
    unreachable.destroy()
  })

  it('answers CloudWatch Logs’ control message and refuses a malformed lift without touching anything', async () => {
    expect(
      await handler(cloudWatchLogsEvent({ messageType: 'CONTROL_MESSAGE', logEvents: [] })),
    ).toEqual({ kind: 'control-message' })
    expect(await handler({ lift: '198.51.100.7' })).toMatchObject({ kind: 'refused' })
  })
})

describe('the IP set writer', () => {
  it('refuses more than 10,000 addresses, and names the set it writes', async () => {
    const writer = new IpSetWriter({
      client: addressBlockWafClient({ endpoint, region: 'us-east-1' }),
      ref: parseIpSetRef(waf.createIpSet('full', 'IPV4')),
    })
    expect(writer.name).toBe('full')
    await expect(
      writer.ensure(Array.from({ length: 10_001 }, (_, i) => `10.0.${i >> 8}.${i & 255}/32`)),
    ).rejects.toThrow(/at most 10000/)
    expect(() => parseIpSetRef('name|id')).toThrow(/name\|id\|scope/)
    expect(() => waf.call('AWSWAF_20190729.DeleteIPSet', {})).toThrow(WafApiError)
  })
})
