import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type CompiledPolicies,
  compilePolicies,
  type IamRequest,
} from '#local/iam/iam-policy-evaluator.ts'
import { type Denial, denialMessage } from './denial-fix.ts'
import type { FunctionRole } from './stage-roles.ts'

// DynamoDB behind each function's deployed role: the local stand-in for IAM's check of a request.

/** A table as the guard knows it: its key in the route table and its partition key attribute. */
export interface GuardedTable {
  /** `pets`, `rateLimits`…: the name the route table and the templates' variables use. */
  key: string
  partitionKey: string
}

export interface DynamoIamGuardOptions {
  /** The DynamoDB endpoint requests go on to once allowed. */
  upstream: string
  roles: ReadonlyMap<string, FunctionRole>
  /** The local tables by their DynamoDB names. */
  tables: ReadonlyMap<string, GuardedTable>
  region: string
  account: string
  /** Told of every refusal, with its fix (the local server logs it). */
  onDenied?: (message: string) => void
  /** Keep every request's authorizations for `requests()` (tests; a server would grow without end). */
  record?: boolean
}

/** One authorization of a function's request, as `requests()` keeps it. */
export interface GuardedRequest {
  service: string
  action: string
  /** The route table's name of the table, or its DynamoDB name when it is none of the stage's. */
  table: string
  indexName: string | undefined
  allowed: boolean
}

export interface DynamoIamGuard {
  /** The DynamoDB endpoint a function is given: requests to it are its role's. */
  endpointFor(service: string): string
  /** Every refusal so far, each with its fix. */
  denials(): readonly string[]
  /** Every authorization so far, when started with `record`. */
  requests(): readonly GuardedRequest[]
  close(): Promise<void>
}

/** How long a close waits for the requests on their way to DynamoDB. */
const CLOSE_GRACE_MS = 5_000

/** One authorization IAM makes for a DynamoDB call (a batch or transaction makes several). */
interface Authorization {
  action: string
  tableName: string
  indexName: string | undefined
  /** The partition key values the call names (dynamodb:LeadingKeys), when it names keys. */
  leadingKeys: string[] | undefined
}

type Item = Record<string, Record<string, unknown>>

/** An attribute value as a condition key compares it: a string or a number's digits. */
const scalar = (value: Record<string, unknown> | undefined): string | undefined => {
  const text = value?.S ?? value?.N ?? value?.B
  return typeof text === 'string' ? text : undefined
}

const tableNameOf = (name: string): string =>
  name.replace(/^arn:[^:]+:dynamodb:[^:]*:\d*:table\//, '')

/** The transaction parts and the single-item action each is authorized as. */
const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
}

/**
 * What IAM authorizes for a call, from DynamoDB's actions reference: one request per table, the
 * index a Query or Scan names as its own resource (`table/T/index/I`), a batch as itself per
 * table, each part of a transaction as the single-item action it is; the partition keys named
 * as `dynamodb:LeadingKeys` ("Using IAM policy conditions for fine-grained access control").
 */
export const authorizationsOf = (
  operation: string,
  input: Record<string, unknown>,
  partitionKeyOf: (tableName: string) => string | undefined,
): Authorization[] => {
  const keysOf = (tableName: string, items: (Item | undefined)[]) => {
    const attribute = partitionKeyOf(tableName)
    return attribute === undefined
      ? undefined
      : items.flatMap((item) => scalar(item?.[attribute] as Record<string, unknown>) ?? [])
  }
  const one = (action: string, tableName: string, items?: (Item | undefined)[]): Authorization => ({
    action,
    tableName: tableNameOf(tableName),
    indexName: undefined,
    leadingKeys: items ? keysOf(tableNameOf(tableName), items) : undefined,
  })
  if (operation === 'BatchWriteItem' || operation === 'BatchGetItem') {
    return Object.entries((input.RequestItems ?? {}) as Record<string, unknown>).map(
      ([name, requests]) => {
        const items =
          operation === 'BatchGetItem'
            ? ((requests as { Keys?: Item[] }).Keys ?? [])
            : (requests as { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]).map(
                (entry) => entry.PutRequest?.Item ?? entry.DeleteRequest?.Key,
              )
        return one(operation, name, items)
      },
    )
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    return (
      (input.TransactItems ?? []) as Record<
        string,
        { TableName: string; Key?: Item; Item?: Item }
      >[]
    ).flatMap((part) =>
      Object.entries(part).map(([kind, call]) =>
        one(TRANSACT_ACTIONS[kind] ?? kind, call.TableName, [call.Key ?? call.Item]),
      ),
    )
  }
  const tableName = String(input.TableName ?? '')
  const key = (input.Key ?? input.Item) as Item | undefined
  return [
    {
      ...one(operation, tableName, key ? [key] : undefined),
      indexName: typeof input.IndexName === 'string' ? input.IndexName : undefined,
    },
  ]
}

const readBody = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const accessDenied = (res: ServerResponse, message: string) => {
  res.writeHead(400, {
    'Content-Type': 'application/x-amz-json-1.0',
    'x-amzn-ErrorType': 'AccessDeniedException',
  })
  res.end(
    JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException', message }),
  )
}

/**
 * What goes on to DynamoDB once allowed, on kept-alive connections. A drain lets the requests on
 * their way finish first (a function's last write may outlive its answer, as the rate limiter's
 * does), so none is cut off inside DynamoDB as it closes.
 */
const forwarderTo = (upstream: URL) => {
  const agent = new Agent({ keepAlive: true })
  let inFlight = 0
  let settled: (() => void) | undefined
  const finished = () => {
    inFlight -= 1
    if (inFlight === 0) settled?.()
  }
  return {
    forward: (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
      const headers = { ...req.headers, host: upstream.host, 'content-length': String(body.length) }
      inFlight += 1
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: '/',
          method: req.method,
          headers,
          agent,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 500, answer.headers)
          answer.pipe(res)
          answer.once('end', finished)
        },
      )
      forwarded.once('error', (error) => {
        finished()
        res.destroy(error)
      })
      forwarded.end(body)
    },
    drain: async () => {
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => {
            settled = resolve
          }),
          new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref()),
        ])
      }
      agent.destroy()
    },
  }
}

/**
 * A DynamoDB endpoint per function in front of the real one (the embedded DynamoDB, or
 * DYNAMODB_ENDPOINT): each request is authorized as IAM would authorize it for the function's
 * deployed role (its synthesized policies, local/iam's evaluator) and goes on only when allowed;
 * a refusal is DynamoDB's AccessDeniedException, with the fix in its message, as on AWS a request
 * the role does not allow fails. The caller is known by the path of its endpoint.
 */
export const startDynamoIamGuard = async (
  options: DynamoIamGuardOptions,
): Promise<DynamoIamGuard> => {
  const compiled = new Map<string, { role: FunctionRole; policies: CompiledPolicies }>(
    [...options.roles].map(([service, role]) => [
      service,
      { role, policies: compilePolicies(role.policies) },
    ]),
  )
  const denials: string[] = []
  const recorded: GuardedRequest[] = []
  const arnOf = (tableName: string, indexName?: string) =>
    `arn:aws:dynamodb:${options.region}:${options.account}:table/${tableName}${indexName ? `/index/${indexName}` : ''}`

  const refusal = (service: string, body: Buffer, target: string): string | undefined => {
    const caller = compiled.get(service)
    const operation = target.split('.')[1] ?? ''
    if (!caller) return `no function of the stage is called ${service}`
    let input: Record<string, unknown>
    try {
      input = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>
    } catch {
      return undefined // DynamoDB answers a malformed body itself.
    }
    const partitionKeyOf = (name: string) => options.tables.get(name)?.partitionKey
    for (const call of authorizationsOf(operation, input, partitionKeyOf)) {
      const resource = arnOf(call.tableName, call.indexName)
      const iamRequest: IamRequest = {
        action: `dynamodb:${call.action}`,
        resource,
        principal: `arn:aws:sts::${options.account}:assumed-role/${caller.role.roleName}/${service}`,
        ...(call.leadingKeys ? { context: { 'dynamodb:LeadingKeys': call.leadingKeys } } : {}),
      }
      const evaluation = caller.policies.evaluate(iamRequest)
      if (options.record) {
        recorded.push({
          service,
          action: call.action,
          table: options.tables.get(call.tableName)?.key ?? call.tableName,
          indexName: call.indexName,
          allowed: evaluation.decision === 'allow',
        })
      }
      if (evaluation.decision === 'allow') continue
      const denial: Denial = {
        service,
        action: call.action,
        table: options.tables.get(call.tableName)?.key,
        indexName: call.indexName,
        reason: evaluation.reason,
      }
      return denialMessage(denial, resource)
    }
    return undefined
  }

  const forwarder = forwarderTo(new URL(options.upstream))
  const server = createServer(async (req, res) => {
    const service = decodeURIComponent((req.url ?? '/').split('/')[1] ?? '')
    const body = await readBody(req)
    const refused = refusal(service, body, String(req.headers['x-amz-target'] ?? ''))
    if (refused) {
      denials.push(refused)
      options.onDenied?.(refused)
      accessDenied(res, refused)
      return
    }
    forwarder.forward(req, res, body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpointFor: (service) => `http://127.0.0.1:${port}/${encodeURIComponent(service)}`,
    denials: () => [...denials],
    requests: () => [...recorded],
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      await forwarder.drain()
      server.closeAllConnections()
      await closed
    },
  }
}
