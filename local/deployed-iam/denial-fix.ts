import {
  indexesOfRoute,
  type OperationTable,
  ROUTES,
  type RouteDefinition,
  tableAccessOf,
} from '#shared/config/routes-config.ts'
import {
  actionsOf,
  indexGrantsOf,
  TABLE_ACCESS_LEVELS,
  type TableAccess,
  type TableGrant,
} from '#shared/config/table-access-config.ts'
import {
  type IndexDefinition,
  type IndexedTable,
  TABLE_INDEXES,
} from '#shared/config/table-indexes-config.ts'

// What to change when the deployed role would refuse a function's DynamoDB request.

/** A DynamoDB request a function's role refused, as the local IAM check saw it. */
export interface Denial {
  /** The function: an operation id, `authorizer` or `key-sync`. */
  service: string
  /** e.g. `Query` (without the `dynamodb:` prefix). */
  action: string
  /** The table as the route table names it (`pets`), when it is one of the stage's tables. */
  table: string | undefined
  /** The DynamoDB name of the index the request named, if any. */
  indexName: string | undefined
  /** The evaluator's reason, for the message. */
  reason: string
}

const ROUTE_TABLE = 'shared/config/routes-config.ts'
const INDEXES = 'shared/config/table-indexes-config.ts'
const LEVELS = 'shared/config/table-access-config.ts'

/** Where the roles of the functions that are not operations are granted. */
const OTHER_ROLES: Record<string, string> = {
  authorizer: 'infra/constructs/api-key-authorizer-construct.ts',
  'key-sync': 'infra/constructs/key-sync-construct.ts',
}

const indexNamed = (table: string, indexName: string): string | undefined =>
  Object.entries(
    (TABLE_INDEXES[table as IndexedTable] ?? {}) as Record<string, IndexDefinition>,
  ).find(([, index]) => index.indexName === indexName)?.[0]

const levelOf = (route: RouteDefinition, table: string): TableAccess | undefined =>
  tableAccessOf(route).find(([name]) => name === table)?.[1]

/** Whether the route entry grants the request: its level's action, on the index it names. */
const routeGrants = (route: RouteDefinition, denial: Denial, level: TableAccess): boolean => {
  const on = denial.indexName ? 'indexes' : 'table'
  const granted = (TABLE_ACCESS_LEVELS[level] as readonly TableGrant[]).some(
    (grant) => grant.on === on && (grant.actions as readonly string[]).includes(denial.action),
  )
  if (!granted || !denial.indexName || !denial.table) return granted
  const name = indexNamed(denial.table, denial.indexName)
  return name !== undefined && indexesOfRoute(route, denial.table).includes(name)
}

/** The fix for an operation's request its route entry does not grant. */
const routeFix = (route: RouteDefinition, denial: Denial, level: TableAccess): string => {
  const { operationId } = route
  const table = denial.table as string
  if (denial.indexName) {
    const name = indexNamed(table, denial.indexName)
    if (name === undefined) {
      return `it queried index ${denial.indexName}, which TABLE_INDEXES.${table} in ${INDEXES} does not define: add it there (the CDK, local and test tables are all made from it), then name it in ${operationId}'s indexes in ${ROUTE_TABLE}`
    }
    if (indexGrantsOf(level).length === 0) {
      return `its level ${level} on ${table} queries no index: give ${operationId} tables.${table} a level of ${LEVELS} that queries indexes (QUERY: indexes alone; LIST: indexes and a scan) and indexes: { ${table}: ['${name}'] } in ${ROUTE_TABLE}`
    }
    return `it reads index '${name}' of ${table}, which its route entry does not name: add '${name}' to ${operationId}'s indexes.${table} in ${ROUTE_TABLE} (its role may query the indexes named there and no other)`
  }
  const declared = indexesOfRoute(route, table)
  if (denial.action === 'Scan' && declared.length > 0) {
    return `it scanned ${table}, but it reads ${table} through its index${declared.length > 1 ? 'es' : ''} ${declared.join(', ')}: query the index (a QueryCommand with IndexName, in the repository of shared/data/) instead of scanning: a listing narrowed by a key or a filter never reads the whole table. Only if every page must read the whole table, give tables.${table} a level that grants Scan (LIST) in ${ROUTE_TABLE}`
  }
  return `its level ${level} on ${table} does not grant ${denial.action}: in ${ROUTE_TABLE} give ${operationId} tables.${table} a level of ${LEVELS} that grants ${denial.action} (and no more than its calls need)`
}

/**
 * The change that makes the deployed role allow what the function did, or stops it asking:
 * for an operation, what its route entry should say (a level, a table, an index it names; a
 * Query for a Scan); when its route entry already grants it, the CDK's translation into the role
 * is at fault; for the authorizer and the key sync, their constructs.
 */
export const denialFix = (denial: Denial, routes: readonly RouteDefinition[] = ROUTES): string => {
  const route = routes.find((candidate) => candidate.operationId === denial.service)
  if (!route) {
    const where = OTHER_ROLES[denial.service] ?? 'its construct under infra/constructs/'
    return `grant ${denial.service}'s role what it needs in ${where}, or stop it calling dynamodb:${denial.action}`
  }
  if (denial.table === undefined) {
    return `it named a table that is none of the stage's: it must use the table names its environment gives it`
  }
  const level = levelOf(route, denial.table)
  if (!level) {
    const some = (Object.keys(TABLE_ACCESS_LEVELS) as TableAccess[]).find((access) =>
      actionsOf(access).includes(denial.action as never),
    )
    return `${denial.table} is a table its route entry does not name: add tables.${denial.table as OperationTable} with a level that grants ${denial.action}${some ? ` (such as ${some})` : ''} to ${route.operationId} in ${ROUTE_TABLE}`
  }
  if (routeGrants(route, denial, level)) {
    return `its route entry grants this (tables.${denial.table} ${level}${denial.indexName ? `, indexes.${denial.table}` : ''}), but the synthesized role does not: the CDK's translation of the route table is wrong (infra/constructs/operation-functions-construct.ts binds each table at its level, with Query on each index the route names; PetstoreFunction.bindTable in infra/constructs/petstore-function-construct.ts writes the statements)`
  }
  return routeFix(route, denial, level)
}

/** The whole message: what was refused, why, and the fix. */
export const denialMessage = (denial: Denial, resource: string): string =>
  `${denial.service} may not dynamodb:${denial.action} on ${resource} (${denial.reason}; its deployed role would refuse it with AccessDeniedException): ${denialFix(denial)}`
