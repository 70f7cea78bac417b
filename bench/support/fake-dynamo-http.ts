import { createHash } from 'node:crypto'
import { EventEmitter } from 'node:events'
import https from 'node:https'
import { Readable } from 'node:stream'
import type { FakeAnswer, FakeCallName, FakeDynamoKit } from '#functions/operation-fixture-types.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { routeOf } from '#shared/config/routes-config.ts'
import type { Operation } from './bench-subjects.ts'

/**
 * DynamoDB's HTTP layer answered in memory: `https.request` (which the SDK's NodeHttpHandler
 * calls) is replaced in this process by a fake that parses the request the SDK serialised and
 * answers with canned JSON. Serialisation, signing, middleware and parsing all still run; only
 * the network is gone, so the figures are CPU per invocation. Every call is counted by operation,
 * with the request units DynamoDB on-demand would bill for it and the round trips a request waits
 * for (calls sent while another is in flight share one).
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

/** Per DynamoDB operation: calls, and the read and write request units they would be billed. */
export interface CallTally {
  calls: number
  readUnits: number
  writeUnits: number
}
export const dynamoCalls = new Map<string, CallTally>()
/** Round trips: calls made while none was in flight (the others overlap one). */
export const roundTrips = { count: 0 }
let inFlight = 0

/**
 * An item's size as DynamoDB bills it ("DynamoDB item sizes and formats",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
 * attribute name bytes plus value bytes; a number 1 byte per two significant digits plus 1; a
 * Boolean or null 1; a list or map 3 plus 1 per element.
 */
const valueSize = (value: Record<string, unknown>): number => {
  const [type, content] = Object.entries(value)[0] ?? ['NULL', true]
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(content))
    case 'N':
      return Math.ceil(String(content).replace(/^[-0.]+|\.|0+$/g, '').length / 2) + 1
    case 'M':
      return (
        3 +
        itemSize(content as Record<string, Record<string, unknown>>) +
        Object.keys(content as object).length
      )
    case 'L':
      return (
        3 + (content as Record<string, unknown>[]).reduce((sum, v) => sum + valueSize(v) + 1, 0)
      )
    default:
      return 1
  }
}
export const itemSize = (item: Record<string, Record<string, unknown>> = {}): number =>
  Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value),
    0,
  )

/**
 * Request units ("Read and write operations",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):
 * a write 1 unit per KB of the item (an update: of the larger of the item before and after; the
 * updated items here, counters, are under 1 KB); a strongly consistent read 1 unit per 4 KB, an
 * eventually consistent one half that; a Query the sum of the items it returns, rounded up to 4 KB.
 */
const unitsOf = (
  operation: string,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
) => {
  const readUnits = (bytes: number) =>
    Math.max(1, Math.ceil(bytes / 4096)) * (input.ConsistentRead ? 1 : 0.5)
  switch (operation) {
    case 'GetItem':
      return { readUnits: readUnits(itemSize(output.Item as never)), writeUnits: 0 }
    case 'Query':
    case 'Scan': {
      const items = (output.Items ?? []) as Record<string, Record<string, unknown>>[]
      return {
        readUnits: readUnits(items.reduce((sum, item) => sum + itemSize(item), 0)),
        writeUnits: 0,
      }
    }
    case 'PutItem':
      return {
        readUnits: 0,
        writeUnits: Math.max(1, Math.ceil(itemSize(input.Item as never) / 1024)),
      }
    case 'UpdateItem':
    case 'DeleteItem':
      return { readUnits: 0, writeUnits: 1 }
    default:
      return { readUnits: 0, writeUnits: 0 }
  }
}

/** Forgets what was counted so far. */
export const resetDynamoCalls = (): void => {
  dynamoCalls.clear()
  roundTrips.count = 0
}

/** The tables a function names in its environment, as the answers below call them. */
const TABLE_VARIABLES = {
  TABLE_NAME: 'pets',
  IDEMPOTENCY_TABLE_NAME: 'idempotency',
  RATE_LIMIT_TABLE_NAME: 'rateLimits',
  KEY_MIRROR_TABLE_NAME: 'keyMirror',
} as const

type Input = Record<string, unknown>

const page: FakeAnswer = (input) => {
  const items = Array.from({ length: Number(input.Limit ?? 21) }, (_, index) => petItem(index + 1))
  return { Items: items, Count: items.length, ScannedCount: items.length }
}

/** What the fixtures' answers are made of: the rate limiter's counters stay low. */
const KIT: FakeDynamoKit = {
  pet: petItem,
  page,
  limiter: { 'UpdateItem rateLimits': () => ({ Attributes: {} }) },
}

/**
 * What DynamoDB answers each call an operation makes for the bench's event: each route's as its
 * folder declares it (`bench.dynamo` of `functions/<fn>/<fn>-fixtures.ts`), the authorizer's
 * here. A call without an answer stops the bench, naming the operation and the call.
 */
const answersOf = (operation: Operation): Partial<Record<FakeCallName, FakeAnswer>> =>
  operation === 'authorizer'
    ? { 'GetItem keyMirror': () => ({ Item: keyMirrorItem() }) }
    : OPERATION_FIXTURES[operation].bench.dynamo(KIT)

/** The first call the fake could not answer, if any: the bench stops on it (unansweredCall). */
let unanswered: string | undefined
let serving: Operation | undefined
let served: Partial<Record<FakeCallName, FakeAnswer>> = {}

const answer = (action: string, input: Input): Record<string, unknown> | undefined => {
  const tableName = String(input.TableName ?? Object.keys(input.RequestItems ?? {})[0] ?? '')
  const table =
    Object.entries(TABLE_VARIABLES).find(
      ([variable]) => process.env[variable] === tableName,
    )?.[1] ?? tableName
  const found = served[`${action} ${table}` as FakeCallName]
  if (found) return found(input)
  const where =
    serving === undefined || serving === 'authorizer'
      ? "the authorizer's answers in bench/support/fake-dynamo-http.ts"
      : `bench.dynamo of functions/${routeOf(serving).functionName}/${routeOf(serving).functionName}-fixtures.ts`
  unanswered ??= `${serving} made DynamoDB call ${action} on ${table}, which the bench's fake DynamoDB does not answer: add '${action} ${table}' to ${where} (DynamoDB's answer for the bench's event)`
  return undefined
}

/** Throws when a call went unanswered: measuring the error path it leads to would mislead. */
export const assertAllCallsAnswered = (): void => {
  if (unanswered) throw new Error(unanswered)
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
    const input = JSON.parse(Buffer.concat(this.#chunks).toString('utf8') || '{}')
    const output = answer(operation, input) ?? {
      __type: 'com.amazonaws.dynamodb.v20120810#ValidationException',
      message: 'the bench has no answer for this call',
    }
    const tally = dynamoCalls.get(operation) ?? { calls: 0, readUnits: 0, writeUnits: 0 }
    const units = unitsOf(operation, input, output)
    dynamoCalls.set(operation, {
      calls: tally.calls + 1,
      readUnits: tally.readUnits + units.readUnits,
      writeUnits: tally.writeUnits + units.writeUnits,
    })
    if (inFlight === 0) roundTrips.count += 1
    inFlight += 1
    const body = Buffer.from(JSON.stringify(output))
    const failed = '__type' in output
    const res = Object.assign(Readable.from([body]), {
      statusCode: failed ? 400 : 200,
      statusMessage: failed ? 'Bad Request' : 'OK',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': String(body.length),
        'x-amzn-requestid': 'bench',
      },
    })
    // Answered after the current turn's microtasks: calls a handler sends together overlap.
    setImmediate(() => {
      inFlight -= 1
      this.#respond(res)
    })
    return this
  }
}

const realRequest = https.request

/** Puts the real https.request back (a test that installed the fake). */
export const uninstallFakeDynamoHttp = (): void => {
  ;(https as { request: typeof realRequest }).request = realRequest
  serving = undefined
  served = {}
  unanswered = undefined
}

/** Replaces https.request for the rest of this process, answering `operation`'s calls. */
export const installFakeDynamoHttp = (operation: Operation): void => {
  serving = operation
  served = answersOf(operation)
  const fake = (options: { headers?: Record<string, string> }, respond: (res: Readable) => void) =>
    new FakeRequest(options.headers ?? {}, respond)
  ;(https as unknown as { request: typeof fake }).request = fake
}
