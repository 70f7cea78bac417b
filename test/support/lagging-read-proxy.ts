import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Clock } from '#shared/time/clock.ts'

/**
 * DynamoDB's read consistency, which dynalite and DynamoDB Local do not show (they always answer
 * with the latest item): an HTTP proxy in front of a real DynamoDB endpoint that answers an
 * eventually consistent GetItem from a lagging view, the item as it was `lagMs` ago, while a
 * GetItem with `ConsistentRead: true` and every other call go through. AWS documents that an
 * eventually consistent read "may not reflect the results of a recently completed write
 * operation", a strongly consistent one reflects "the updates from all prior write operations that
 * were successful" (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html).
 * The lag is on an injected clock, so a test decides when a write has propagated.
 *
 * How: before forwarding a write (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
 * TransactWriteItems) the proxy reads each item it touches, consistently, and keeps that image
 * with the time of the write. The view at time T is the image kept by the first write after T,
 * or the current item when no write came after T. Only GetItem without a projection is lagged;
 * Query and Scan are served current.
 */
export interface LaggingReadProxy {
  endpoint: string
  close(): Promise<void>
}

export interface LaggingReadOptions {
  /** How long a write takes to reach the view eventually consistent reads see. */
  lagMs: number
  clock: Clock
}

type AttributeMap = Record<string, unknown>
type Call = Record<string, unknown>

const TARGET_PREFIX = 'DynamoDB_20120810'

interface Version {
  /** When the write that replaced this image completed. */
  replacedAt: number
  /** The item before that write; undefined: there was none. */
  before: AttributeMap | undefined
}

/** The items a write call touches: its table, and its key or the whole item (a put). */
const touchedBy = (operation: string, call: Call): { table: string; item: AttributeMap }[] => {
  const one = (target: Call) => ({
    table: target.TableName as string,
    item: (target.Key ?? target.Item) as AttributeMap,
  })
  switch (operation) {
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [one(call)]
    case 'BatchWriteItem':
      return Object.entries(call.RequestItems as Record<string, Call[]>).flatMap(
        ([table, requests]) =>
          requests.map((writeRequest) => {
            const put = writeRequest.PutRequest as Call | undefined
            const del = writeRequest.DeleteRequest as Call | undefined
            return { table, item: (put?.Item ?? del?.Key) as AttributeMap }
          }),
      )
    case 'TransactWriteItems':
      return (call.TransactItems as Call[]).flatMap((entry) => {
        const write = (entry.Put ?? entry.Update ?? entry.Delete) as Call | undefined
        return write ? [one(write)] : []
      })
    default:
      return []
  }
}

export const startLaggingReadProxy = async (
  target: string,
  { lagMs, clock }: LaggingReadOptions,
): Promise<LaggingReadProxy> => {
  const upstream = new URL(target)
  const keyNames = new Map<string, string[]>()
  const versions = new Map<string, Version[]>()

  const forward = ({ 'transfer-encoding': _, ...headers }: Record<string, unknown>, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
      (resolve, reject) => {
        const outgoing = request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: 'POST',
            path: '/',
            headers: { ...headers, 'content-length': body.length },
          },
          (answer) => {
            const chunks: Buffer[] = []
            answer.on('data', (chunk: Buffer) => chunks.push(chunk))
            answer.on('end', () =>
              resolve({
                status: answer.statusCode ?? 500,
                headers: answer.headers,
                body: Buffer.concat(chunks),
              }),
            )
          },
        )
        outgoing.on('error', reject)
        outgoing.end(body)
      },
    )

  /** The proxy's own calls, with a dummy signature: dynalite and DynamoDB Local do not check. */
  const call = async (operation: string, input: Call): Promise<Call> => {
    const answer = await forward(
      {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `${TARGET_PREFIX}.${operation}`,
        'x-amz-date': '20260101T000000Z',
        authorization:
          'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
      },
      Buffer.from(JSON.stringify(input)),
    )
    if (answer.status !== 200) throw new Error(`${operation} failed: ${answer.body.toString()}`)
    return JSON.parse(answer.body.toString()) as Call
  }

  const itemId = async (table: string, item: AttributeMap) => {
    let names = keyNames.get(table)
    if (!names) {
      const { Table } = (await call('DescribeTable', { TableName: table })) as {
        Table: { KeySchema: { AttributeName: string }[] }
      }
      names = Table.KeySchema.map(({ AttributeName }) => AttributeName)
      keyNames.set(table, names)
    }
    const key = Object.fromEntries(names.map((name) => [name, item[name]]))
    return { id: `${table}\u0000${JSON.stringify(key)}`, key }
  }

  const currentItem = async (table: string, key: AttributeMap) =>
    (await call('GetItem', { TableName: table, Key: key, ConsistentRead: true })).Item as
      | AttributeMap
      | undefined

  /** Keeps the images a write is about to replace; they are stamped once it completes. */
  const beforeWrite = async (operation: string, input: Call) =>
    Promise.all(
      touchedBy(operation, input).map(async ({ table, item }) => {
        const { id, key } = await itemId(table, item)
        return { id, before: await currentItem(table, key) }
      }),
    )

  const record = (images: { id: string; before: AttributeMap | undefined }[]) => {
    const now = clock()
    for (const { id, before } of images) {
      // Images replaced longer than the lag ago are never served again.
      const kept = (versions.get(id) ?? []).filter(({ replacedAt }) => replacedAt > now - lagMs)
      kept.push({ replacedAt: now, before })
      versions.set(id, kept)
    }
  }

  /** The lagging view of a GetItem, or undefined when it is the current item. */
  const laggingAnswer = async (get: Call): Promise<Call | undefined> => {
    if (get.ConsistentRead === true || get.ProjectionExpression || get.AttributesToGet) return
    const { id } = await itemId(get.TableName as string, get.Key as AttributeMap)
    const since = clock() - lagMs
    const version = versions.get(id)?.find(({ replacedAt }) => replacedAt > since)
    if (!version) return
    return version.before ? { Item: version.before } : {}
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      const operation = String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .at(-1) as string
      try {
        const input = body.length > 0 ? (JSON.parse(body.toString()) as Call) : {}
        if (operation === 'GetItem') {
          const lagging = await laggingAnswer(input)
          if (lagging) {
            res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0' })
            res.end(JSON.stringify(lagging))
            return
          }
        }
        const images = await beforeWrite(operation, input)
        const answer = await forward(req.headers, body)
        // A refused or unprocessed write leaves the item as its image shows: keeping it is harmless.
        if (images.length > 0) record(images)
        res.writeHead(answer.status, answer.headers as Record<string, string>)
        res.end(answer.body)
      } catch {
        // What the SDK sees of a DynamoDB that failed mid-answer: it retries or fails the call.
        req.socket.destroy()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(() => resolve(undefined)))
    },
  }
}
