import type { APIGatewayProxyResult } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GuardedRequest } from '#local/deployed-iam/dynamo-iam-guard.ts'
import {
  indexesOfRoute,
  type OperationTable,
  ROUTES,
  type Route,
} from '#shared/config/routes-config.ts'
import {
  TABLE_ACCESS_LEVELS,
  type TableAccess,
  type TableGrant,
} from '#shared/config/table-access-config.ts'
import { type IndexDefinition, TABLE_INDEXES } from '#shared/config/table-indexes-config.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import { OLD_ITEM_READS } from '#test/support/dynamo-test-env.ts'
import { outcomesOf } from '#test/support/operation-requests.ts'
import {
  type OperationsUnderIam,
  startOperationsUnderIam,
} from '#test/support/operations-under-iam.ts'

/**
 * IAM as AWS will evaluate it, on each route's function: its Lambda entry runs its sample
 * requests, one or more per outcome (the outcomes its fixtures declare), with the variables its
 * synthesized template gives it, and each DynamoDB request is authorized against its role's
 * synthesized policies (the template's, not the route table's, so a wrong translation by the CDK
 * fails here too) by local/deployed-iam/, as the local server does: a request on the table or an
 * index (`table/T/index/I`) the role does not allow is refused with AccessDeniedException, as on
 * AWS (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html),
 * and fails this test with its fix. Each grant its route entry asks for must also be used by
 * some sample: a level or index no request needs is wider than least privilege.
 */
let operations: OperationsUnderIam

beforeAll(async () => {
  operations = await startOperationsUnderIam()
})
afterAll(async () => {
  await operations?.close()
})

const indexName = (table: string, name: string): string | undefined =>
  (TABLE_INDEXES[table as keyof typeof TABLE_INDEXES] as Record<string, IndexDefinition>)[name]
    ?.indexName

/**
 * What a route's entry asks for that none of its requests used (the counters excluded): an
 * action of a level, or an index it names. A listing that scans where it names an index is told
 * to query the index, not to widen or narrow its level.
 */
const unusedOf = (route: Route, requests: readonly GuardedRequest[]): string[] => {
  const fixtures = `functions/${route.functionName}/${route.functionName}-fixtures.ts`
  const used = (table: string, action: string, index?: string) =>
    requests.some(
      (r) =>
        r.table === table &&
        r.action === action &&
        (index === undefined ? r.indexName === undefined : r.indexName === index),
    )
  return (Object.entries(route.tables) as [OperationTable, TableAccess][]).flatMap(
    ([table, access]) => {
      const declared = indexesOfRoute(route, table)
      const scanned = used(table, 'Scan')
      const unusedIndexes = declared.filter((name) => {
        const index = indexName(table, name)
        return (
          index === undefined || !requests.some((r) => r.table === table && r.indexName === index)
        )
      })
      const indexProblems = unusedIndexes.map((name) =>
        scanned
          ? `${route.operationId} names index '${name}' of ${table} but never queried it, and scanned ${table} instead: query the index (a QueryCommand with IndexName ${indexName(table, name)}, in the repository of shared/data/): a listing narrowed by a key or a filter never reads the whole table`
          : `${route.operationId} names index '${name}' of ${table}, which none of its requests queried: take it out of its indexes in shared/config/routes-config.ts, or add the outcome that queries it to the outcomes of ${fixtures}`,
      )
      const actionProblems = (TABLE_ACCESS_LEVELS[access] as readonly TableGrant[]).flatMap(
        (grant) =>
          grant.actions
            .filter((action) =>
              grant.on === 'table'
                ? !used(table, action)
                : // An index grant unused: said above, index by index.
                  false,
            )
            .map(
              (action) =>
                `${route.operationId}'s level ${access} on ${table} grants ${action}, which its requests never used: choose a narrower level for ${route.operationId} tables.${table} (or none) in shared/config/routes-config.ts (or add the outcome that uses it to the outcomes of ${fixtures})`,
            ),
      )
      return [...indexProblems, ...actionProblems]
    },
  )
}

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
    '%s: the requests of each outcome get its status and the deprecation marks its route says, need nothing its synthesized role does not allow, and use every grant its route entry asks for',
    async (operationId, route) => {
      const handler = await operations.load(route, 'route-table-access')
      const before = operations.iam.guard.requests().length
      const deniedBefore = operations.iam.guard.denials().length
      const statuses: number[] = []
      const missed: string[] = []
      const marks = new Set<string | undefined>()
      for (const [status, outcome] of outcomesOf(route.operationId)) {
        if (!('requests' in outcome)) continue
        for (const request of outcome.requests) {
          const event = restEvent({ method: route.method, resource: route.path, ...request })
          const answer = await handler(event, lambdaContext(operationId))
          statuses.push(answer.statusCode)
          marks.add(deprecationMarkOf(route, answer))
        }
        if (statuses.at(-1) !== status) {
          missed.push(
            `${operationId}'s sample for ${status} (outcomes of functions/${route.functionName}/${route.functionName}-fixtures.ts) got ${statuses.at(-1)}`,
          )
        }
      }
      const requests = operations.iam.guard
        .requests()
        .slice(before)
        .filter((request) => request.service === operationId)
      expect(operations.iam.guard.denials().slice(deniedBefore)).toEqual([])
      expect(statuses.filter((status) => status >= 500)).toEqual([])
      expect(missed).toEqual([])
      expect([...marks].filter((mark) => mark !== undefined)).toEqual([])
      expect(requests.length).toBeGreaterThan(0)
      // dynalite makes createPet read a refused claim back (OLD_ITEM_READS); DynamoDB does not.
      if (OLD_ITEM_READS > 0) expect(unusedOf(route, requests)).toEqual([])
    },
  )
})
