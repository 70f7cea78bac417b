import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { APIGatewayProxyResult, Context } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { functionEntry } from '#functions/function-entries.ts'
import {
  indexesOfRoute,
  type OperationTable,
  ROUTES,
  type Route,
  type RouteDefinition,
  tableAccessOf,
} from '#shared/config/routes-config.ts'
import {
  type DynamoAction,
  TABLE_ACCESS_LEVELS,
  type TableAccess,
  type TableGrant,
} from '#shared/config/table-access-config.ts'
import { type IndexDefinition, TABLE_INDEXES } from '#shared/config/table-indexes-config.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import {
  type DynamoTestEnv,
  OLD_ITEM_READS,
  startDynamoTestEnv,
} from '#test/support/dynamo-test-env.ts'
import { outcomesOf } from '#test/support/operation-requests.ts'

/**
 * IAM as the route table grants it, checked where the local server cannot: each route's Lambda
 * entry runs its sample requests, one or more per outcome (the outcomes its folder declares), against DynamoDB through a proxy
 * that lets through only the actions its route's table access levels grant, on its own tables
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html:
 * a call without the action on the table's ARN, or the index's for a Query of an index, is
 * refused with AccessDeniedException). A level too narrow would fail every such call on AWS;
 * here it fails this test, naming the action and what to change. The synthesized template is
 * checked to grant exactly these levels (test/infra/functions.test.ts).
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url))

type TableName = OperationTable | 'rateLimits'
interface Call {
  table: TableName | string
  action: string
  on: 'table' | 'indexes'
}

let env: DynamoTestEnv
const savedEnv = { ...process.env }
/** Puts back every variable a cold start below set, on process.env itself. */
const restoreEnv = () => {
  for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name]
  Object.assign(process.env, savedEnv)
}

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  restoreEnv()
  await env?.close()
})

const tableKeyOf = (name: string): TableName | string =>
  ({
    [env.petTable]: 'pets',
    [env.idempotencyTable]: 'idempotency',
    [env.rateLimitTable]: 'rateLimits',
  })[name] ?? name

const grantsOf = (route: Route) =>
  new Map<string, readonly TableGrant[]>(
    tableAccessOf(route).map(([table, access]) => [table, TABLE_ACCESS_LEVELS[access]]),
  )

/** The DynamoDB names of the indexes a route names on a table. */
const declaredIndexNames = (route: Route, table: string): string[] =>
  indexesOfRoute(route, table).map(
    (name) =>
      (TABLE_INDEXES[table as keyof typeof TABLE_INDEXES] as Record<string, IndexDefinition>)[name]
        ?.indexName ?? name,
  )

/** A DynamoDB endpoint that refuses what the route's levels do not grant and records each call. */
const startIamProxy = async (route: Route) => {
  const calls: Call[] = []
  const denials = new Set<string>()
  const grants = grantsOf(route)
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    const action = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? ''
    const input = JSON.parse(body.toString('utf8') || '{}') as {
      TableName?: string
      IndexName?: string
      RequestItems?: Record<string, unknown>
    }
    const tables = input.TableName ? [input.TableName] : Object.keys(input.RequestItems ?? {})
    const on = input.IndexName ? 'indexes' : 'table'
    const refused = tables.filter((name) => {
      const table = tableKeyOf(name)
      calls.push({ table, action, on })
      // An index query is granted on the indexes the route names alone.
      if (input.IndexName && !declaredIndexNames(route, table).includes(input.IndexName))
        return true
      return !(grants.get(table) ?? []).some(
        (grant) => grant.on === on && (grant.actions as readonly string[]).includes(action),
      )
    })
    if (refused.length > 0) {
      const table = tableKeyOf(refused[0] as string)
      const level = (route.tables as RouteDefinition['tables'])[table as OperationTable]
      denials.add(
        level
          ? `${route.operationId} called dynamodb:${action} on ${table}${on === 'indexes' ? ' (an index)' : ''}, which its level ${level} does not grant: in shared/config/routes-config.ts give ${route.operationId} tables.${table} a level of shared/config/table-access-config.ts that grants ${action}`
          : `${route.operationId} called dynamodb:${action} on ${table}, a table its route does not name: add tables.${table} with a level that grants ${action} to ${route.operationId} in shared/config/routes-config.ts`,
      )
      res.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' })
      res.end(
        JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException',
          message: `not authorized to perform dynamodb:${action}`,
        }),
      )
      return
    }
    const upstream = await fetch(env.endpoint, {
      method: 'POST',
      headers: Object.fromEntries(
        Object.entries(req.headers).filter(
          (entry): entry is [string, string] =>
            typeof entry[1] === 'string' &&
            !['host', 'content-length', 'connection'].includes(entry[0]),
        ),
      ),
      body,
    })
    res.writeHead(upstream.status, { 'Content-Type': upstream.headers.get('content-type') ?? '' })
    res.end(Buffer.from(await upstream.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    denied: () => [...denials],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

type Handler = (event: unknown, context: Context) => Promise<APIGatewayProxyResult>

/** The route's Lambda entry, a fresh instance built from this environment (as a cold start). */
const loadEntry = async (route: Route, endpoint: string): Promise<Handler> => {
  Object.assign(process.env, {
    AWS_REGION: savedEnv.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: savedEnv.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: savedEnv.AWS_SECRET_ACCESS_KEY ?? 'local',
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_NAME: env.petTable,
    RATE_LIMIT_TABLE_NAME: env.rateLimitTable,
    IDEMPOTENCY_TABLE_NAME: env.idempotencyTable,
    CURSOR_SECRET: 'c'.repeat(64),
  })
  const url = pathToFileURL(join(repoRoot, functionEntry(route)))
  url.searchParams.set('route-table-access', route.operationId)
  return ((await import(url.href)) as { handler: Handler }).handler
}

/** Actions a route's own levels grant that none of its requests used (the counters excluded). */
const unusedOf = (route: Route, calls: Call[]): string[] =>
  (Object.entries(route.tables) as [OperationTable, TableAccess][]).flatMap(([table, access]) =>
    (TABLE_ACCESS_LEVELS[access] as readonly TableGrant[]).flatMap((grant) =>
      grant.actions
        .filter(
          (action: DynamoAction) =>
            !calls.some((c) => c.table === table && c.action === action && c.on === grant.on),
        )
        .map(
          (action) =>
            `${route.operationId}'s level ${access} on ${table} grants ${action}, which its requests never used: choose a narrower level for ${route.operationId} tables.${table} (or none) in shared/config/routes-config.ts (or add the outcome that uses it to the outcomes of functions/${route.functionName}/${route.functionName}-fixtures.ts)`,
        ),
    ),
  )

/**
 * What is wrong with an answer's deprecation marks: the route entry alone says an operation is
 * deprecated (operationPipeline adds the marks from it), so an answer marked without one is a
 * handler built on another operation's pipeline.
 */
const deprecationMarkOf = (route: Route, answer: APIGatewayProxyResult): string | undefined => {
  const marked = Object.keys(answer.headers ?? {}).some(
    (name) => name.toLowerCase() === 'deprecation',
  )
  if (marked === 'deprecation' in route) return undefined
  return marked
    ? `${route.operationId} answered with a Deprecation header, but its route entry has no \`deprecation\`: build its handler on operationPipeline('${route.operationId}', …) (shared/middleware/http-pipeline.ts), not another operation's, and add no deprecation middleware of its own`
    : `${route.operationId}'s route entry has a \`deprecation\`, but its answer has no Deprecation header: build its handler on operationPipeline('${route.operationId}', …) (shared/middleware/http-pipeline.ts)`
}

describe('table access of each route, enforced as IAM would', () => {
  // In route-table order: later operations read what createPet made.
  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    '%s: the requests of each outcome get its status and the deprecation marks its route says, need no DynamoDB action its route does not grant, and use every one it does',
    async (_operationId, route) => {
      const proxy = await startIamProxy(route)
      try {
        const handler = await loadEntry(route, proxy.endpoint)
        const statuses: number[] = []
        const missed: string[] = []
        const marks = new Set<string | undefined>()
        for (const [status, outcome] of outcomesOf(route.operationId)) {
          if (!('requests' in outcome)) continue
          for (const request of outcome.requests) {
            const event = restEvent({ method: route.method, resource: route.path, ...request })
            const answer = await handler(event, lambdaContext(route.operationId))
            statuses.push(answer.statusCode)
            marks.add(deprecationMarkOf(route, answer))
          }
          if (statuses.at(-1) !== status) {
            missed.push(
              `${route.operationId}'s sample for ${status} (outcomes of functions/${route.functionName}/${route.functionName}-fixtures.ts) got ${statuses.at(-1)}`,
            )
          }
        }
        expect(proxy.denied()).toEqual([])
        expect(statuses.filter((status) => status >= 500)).toEqual([])
        expect(missed).toEqual([])
        expect([...marks].filter((mark) => mark !== undefined)).toEqual([])
        expect(proxy.calls.length).toBeGreaterThan(0)
        // dynalite makes createPet read a refused claim back (OLD_ITEM_READS); DynamoDB does not.
        if (OLD_ITEM_READS > 0) expect(unusedOf(route, proxy.calls)).toEqual([])
      } finally {
        restoreEnv()
        await proxy.close()
      }
    },
  )
})
