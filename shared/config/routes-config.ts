import { actionsOf, indexGrantsOf, type TableAccess, WRITE_ACTIONS } from './table-access-config.ts'
import type { IndexOf } from './table-indexes-config.ts'

/**
 * The route table: one entry per operation says everything that differs between operations, and
 * the rest derives from it: the local gateway and the CDK REST API (method, path), each function
 * (folder, timeout, table grants), the rate limiter's ordering (writes), deprecation (the marks of
 * every answer, the OpenAPI document's `deprecated`), the OpenAPI document (success and error
 * statuses), where each operation's declaration lives (functions/operation-fixtures.ts) and the
 * checks that every operation is documented, in the typed client, in the smoke test and in the
 * bench (docs/adding-an-operation.md).
 * Paths are relative to the `/v1` base path; `{name}` marks a path parameter.
 */
export const API_VERSION_PATH = '/v1'

/**
 * The pet operations' longest path that can still answer makes three DynamoDB calls in a row
 * (limiter, id block, put), each bounded well inside this (dynamo-client.ts).
 */
const PET_OPERATION_SECONDS = 10

/** Every operation can answer these: the gateway's 401, validation, the limiter, failures. */
export const COMMON_ERROR_STATUSES = [400, 401, 429, 500, 503] as const

export const ROUTES = [
  {
    operationId: 'listPets',
    method: 'GET',
    path: '/pets',
    functionName: 'list-pets',
    // A scan, or a query of the status index.
    tables: { pets: 'LIST' },
    indexes: { pets: ['status'] },
    cursors: true,
    timeoutSeconds: PET_OPERATION_SECONDS,
    successStatus: 200,
    errors: [],
  },
  {
    operationId: 'createPet',
    method: 'POST',
    path: '/pets',
    functionName: 'create-pet',
    // A put of the pet and an update of the id counter (it never reads pets); the idempotency
    // record is claimed, completed and read back on a replay.
    tables: { pets: 'APPEND', idempotency: 'RW' },
    timeoutSeconds: PET_OPERATION_SECONDS,
    successStatus: 201,
    errors: [409, 413, 415, 422],
  },
  {
    operationId: 'getPet',
    method: 'GET',
    path: '/pets/{petId}',
    functionName: 'get-pet',
    tables: { pets: 'LOOKUP' },
    timeoutSeconds: PET_OPERATION_SECONDS,
    successStatus: 200,
    errors: [404, 410],
    // RFC 9745 / RFC 8594: deprecated since this API's launch, removed on 5 December 2030.
    deprecation: {
      deprecatedAt: '2026-11-22T00:00:00Z',
      sunsetAt: '2030-12-05T00:00:00Z',
      successorPath: '/pets',
    },
  },
] as const satisfies readonly RouteDefinition[]

/** The tables an operation can be granted; every operation also gets RATE_LIMIT_TABLE_ACCESS. */
export type OperationTable = 'pets' | 'idempotency'

/** The indexes a route reads, per table, by their names in TABLE_INDEXES. */
export type OperationIndexes = { [Table in OperationTable]?: readonly IndexOf<Table>[] }

/** Every operation is rate limited: counters are read and updated item by item, never put. */
export const RATE_LIMIT_TABLE_ACCESS: TableAccess = 'COUNT'

export interface RouteDefinition {
  operationId: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  /** Folder under functions/ holding `<name>-lambda.ts`. */
  functionName: string
  /**
   * Whether the operation changes data: the rate limiter lets a write wait for its decision and
   * races a read against it. Derived from the method (only GET reads) unless stated here.
   */
  writes?: boolean
  /** The level of access (table-access-config.ts) the function gets on each table it uses. */
  tables: Partial<Record<OperationTable, TableAccess>> & { pets: TableAccess }
  /**
   * The indexes (table-indexes-config.ts) the function queries, per table: a level that grants
   * Query on indexes (LIST, QUERY) grants it on exactly these, and the function may query no
   * other. Every index named here must be one its table's level lets it query.
   */
  indexes?: OperationIndexes
  /**
   * The operation pages its answers with cursors (`Link: rel="next"`, `X-Next-Cursor`): its
   * function gets the stage's cursor secret (CURSOR_SECRET), and a cursor one listing issued is
   * refused by every other. No other function gets the secret.
   */
  cursors?: true
  /** The Lambda timeout; the local gateway reports it to the handler too. */
  timeoutSeconds: number
  /** The status of a successful answer. */
  successStatus: 200 | 201 | 204
  /** Error statuses beyond COMMON_ERROR_STATUSES that the operation can answer. */
  errors: readonly (404 | 409 | 410 | 413 | 415 | 422)[]
  deprecation?: RouteDeprecation
}

export interface RouteDeprecation {
  deprecatedAt: string
  sunsetAt: string
  /** Path of the replacement, relative to the base address. */
  successorPath: string
}

export type Route = (typeof ROUTES)[number]
export type OperationId = Route['operationId']

export const routeOf = <Id extends OperationId>(
  operationId: Id,
): Extract<Route, { operationId: Id }> => {
  const route = ROUTES.find((candidate) => candidate.operationId === operationId)
  if (!route) throw new Error(`Unknown operation ${operationId}`)
  return route as Extract<Route, { operationId: Id }>
}

/** A route writes when it says so, otherwise when its method is not GET. */
export const writesOf = (route: RouteDefinition): boolean => route.writes ?? route.method !== 'GET'

/** What the rate limiter needs to know of a route (shared/rate-limit/rate-limit-middleware.ts). */
export const limiterAccessOf = (route: RouteDefinition): 'read' | 'write' =>
  writesOf(route) ? 'write' : 'read'

/** Every table the route's function may use, with its level, the rate-limit counters included. */
export const tableAccessOf = (
  route: RouteDefinition,
): [OperationTable | 'rateLimits', TableAccess][] => [
  ...(Object.entries(route.tables) as [OperationTable, TableAccess][]),
  ['rateLimits', RATE_LIMIT_TABLE_ACCESS],
]

/** The indexes the route declares it reads on a table (none unless its entry names them). */
export const indexesOfRoute = (route: RouteDefinition, table: string): readonly string[] =>
  (route.indexes as Record<string, readonly string[]> | undefined)?.[table] ?? []

/**
 * What is wrong with a route's index declarations, each with its fix: a level that queries
 * indexes needs the ones it reads named, and an index named needs a level that may query it.
 */
export const indexDeclarationProblems = (route: RouteDefinition): string[] =>
  tableAccessOf(route).flatMap(([table, access]) => {
    const declared = indexesOfRoute(route, table)
    const queriesIndexes = indexGrantsOf(access).length > 0
    if (queriesIndexes && declared.length === 0) {
      return [
        `${route.operationId}'s level ${access} on ${table} queries indexes, but its route entry names none: add indexes: { ${table}: [<the index it queries, a key of TABLE_INDEXES.${table} in shared/config/table-indexes-config.ts>] } to ${route.operationId} in shared/config/routes-config.ts (or choose a level without index queries)`,
      ]
    }
    if (!queriesIndexes && declared.length > 0) {
      return [
        `${route.operationId} names indexes ${declared.join(', ')} of ${table}, but its level ${access} may not query any: give tables.${table} a level of shared/config/table-access-config.ts that queries indexes (QUERY, or LIST with a scan), or take indexes.${table} out of ${route.operationId} in shared/config/routes-config.ts`,
      ]
    }
    return []
  })

/** Whether the route's own tables (not the counters every route updates) grant a write. */
export const grantsWrite = (route: RouteDefinition): boolean =>
  (Object.values(route.tables) as TableAccess[]).some((access) =>
    actionsOf(access).some((action) => WRITE_ACTIONS.includes(action)),
  )

/** Every error status the operation can answer, in ascending order. */
export const errorStatusesOf = (route: RouteDefinition): number[] =>
  [...new Set<number>([...COMMON_ERROR_STATUSES, ...route.errors])].sort((a, b) => a - b)
