import { createHash } from 'node:crypto'
import { EventEmitter } from 'node:events'
import https from 'node:https'
import { Readable } from 'node:stream'

/**
 * DynamoDB's HTTP layer answered in memory: `https.request` (which the SDK's NodeHttpHandler
 * calls) is replaced in this process by a fake that parses the request the SDK serialised and
 * answers with canned JSON. Serialisation, signing, middleware and parsing all still run; only
 * the network is gone, so the figures are CPU per invocation. Every call is counted by operation.
 */

export const BENCH_API_KEY = 'bench-enterprise-0123456789abcdef'

const n = (value: number) => ({ N: String(value) })
const s = (value: string) => ({ S: value })

const petItem = (id: number) => ({
  pk: s(`PET#${id}`),
  id: n(id),
  name: s(`pet ${id}`),
  categoryId: n(42),
  status: s('available'),
  createdAt: s('2026-11-22T00:00:00.000Z'),
})

const keyMirrorItem = () => ({
  keyHash: s(createHash('sha256').update(BENCH_API_KEY).digest('hex')),
  keyId: s('benchkeyid'),
  enabled: { BOOL: true },
  plan: s('enterprise'),
  perMinute: n(1_000_000),
  perDay: n(100_000_000),
  usagePlanId: s('benchplan'),
  syncedAt: s('2026-11-22T00:00:00.000Z'),
})

export const dynamoCalls = new Map<string, number>()
let counter = 0

const answer = (operation: string, input: Record<string, unknown>): unknown => {
  const table = String(input.TableName ?? '')
  switch (operation) {
    case 'GetItem':
      return { Item: table.includes('mirror') ? keyMirrorItem() : petItem(1) }
    case 'Query':
    case 'Scan': {
      const limit = Number(input.Limit ?? 21)
      const items = Array.from({ length: limit }, (_, index) => petItem(index + 1))
      return { Items: items, Count: items.length, ScannedCount: items.length }
    }
    case 'PutItem':
      return {}
    case 'UpdateItem':
      // The id counter reserves blocks; the rate limiter's counters stay low.
      if (String(JSON.stringify(input.Key)).includes('COUNTER#pet')) {
        counter += 50
        return { Attributes: { lastReservedId: n(counter) } }
      }
      return { Attributes: {} }
    default:
      return {}
  }
}

class FakeRequest extends EventEmitter {
  readonly #headers: Record<string, string>
  readonly #respond: (res: Readable) => void
  readonly #chunks: Buffer[] = []

  constructor(headers: Record<string, string>, respond: (res: Readable) => void) {
    super()
    this.#headers = headers
    this.#respond = respond
  }

  setTimeout(): this {
    return this
  }
  setNoDelay(): this {
    return this
  }
  destroy(): this {
    return this
  }
  write(chunk: Buffer | string): boolean {
    this.#chunks.push(Buffer.from(chunk))
    return true
  }
  end(chunk?: Buffer | string): this {
    if (chunk) this.write(chunk)
    const target = Object.entries(this.#headers).find(
      ([name]) => name.toLowerCase() === 'x-amz-target',
    )?.[1]
    const operation = String(target).split('.').at(-1) ?? 'unknown'
    dynamoCalls.set(operation, (dynamoCalls.get(operation) ?? 0) + 1)
    const input = JSON.parse(Buffer.concat(this.#chunks).toString('utf8') || '{}')
    const body = Buffer.from(JSON.stringify(answer(operation, input)))
    const res = Object.assign(Readable.from([body]), {
      statusCode: 200,
      statusMessage: 'OK',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': String(body.length),
        'x-amzn-requestid': 'bench',
      },
    })
    queueMicrotask(() => this.#respond(res))
    return this
  }
}

/** Replaces https.request for the rest of this process. */
export const installFakeDynamoHttp = (): void => {
  const fake = (options: { headers?: Record<string, string> }, respond: (res: Readable) => void) =>
    new FakeRequest(options.headers ?? {}, respond)
  ;(https as unknown as { request: typeof fake }).request = fake
}
