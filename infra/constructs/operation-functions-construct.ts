import { Duration } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import { functionEntry } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import {
  API_VERSION_PATH,
  indexDeclarationProblems,
  indexesOfRoute,
  type OperationId,
  ROUTES,
  type RouteDefinition,
  tableAccessOf,
} from '#shared/config/routes-config.ts'
import { type IndexDefinition, TABLE_INDEXES } from '#shared/config/table-indexes-config.ts'
import { CORS_ALLOW_ORIGIN_VARIABLE } from '#shared/http/cors-headers.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

// Every route's function, bound to the tables and indexes its route entry names and no more.

export interface OperationFunctionsProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
  /** createPet's idempotency records. */
  idempotencyTable: ITable
}

/**
 * The DynamoDB names of the indexes a route names on a table; a declaration its level cannot
 * honour (indexes without an index-querying level, or such a level without indexes) stops the
 * synthesis, naming the fix.
 */
const declaredIndexNames = (route: RouteDefinition, table: string): string[] => {
  const problems = indexDeclarationProblems(route)
  if (problems.length > 0) throw new Error(problems.join('\n'))
  const indexes = TABLE_INDEXES[table as keyof typeof TABLE_INDEXES] as Record<
    string,
    IndexDefinition
  >
  return indexesOfRoute(route, table).map((name) => {
    const index = indexes[name]
    if (!index) {
      throw new Error(
        `${route.operationId} names index ${name} of ${table}, which shared/config/table-indexes-config.ts does not define: add it to TABLE_INDEXES.${table}`,
      )
    }
    return index.indexName
  })
}

const pascalCase = (operationId: string): string =>
  operationId.charAt(0).toUpperCase() + operationId.slice(1)

/**
 * One function per route of the shared route table (id `ListPets` etc., in `scope` itself: see
 * PetstoreApi), each bound to the tables it needs and no more.
 */
export const addOperationFunctions = (
  scope: Construct,
  { config, petTable, rateLimitTable, idempotencyTable }: OperationFunctionsProps,
): Record<OperationId, PetstoreFunction> => {
  const { stage } = config
  // Each table an operation can name in the route table and the variable that carries its name.
  const tables = {
    pets: { table: petTable, envVar: 'TABLE_NAME' },
    idempotency: { table: idempotencyTable, envVar: 'IDEMPOTENCY_TABLE_NAME' },
    rateLimits: { table: rateLimitTable, envVar: 'RATE_LIMIT_TABLE_NAME' },
  }
  const defaults = stageFunctionDefaults(config)
  const entries = ROUTES.map((route) => {
    const fn = new PetstoreFunction(scope, pascalCase(route.operationId), {
      ...defaults,
      entry: functionEntry(route),
      serviceName: route.operationId,
      description: `Petstore ${stage}: ${route.operationId} (${route.method} ${API_VERSION_PATH}${route.path})`,
      logGroupName: `/petstore/${stage}/${route.functionName}`,
      timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS[route.operationId]),
      liveAlias: true,
      // The functions' answers carry the CORS headers themselves: a proxy integration passes
      // them through, API Gateway adds none ("CORS for REST APIs in API Gateway", AWS docs).
      environment: { [CORS_ALLOW_ORIGIN_VARIABLE]: config.corsAllowOrigin },
    })
    // Exactly the levels its route names (shared/config/routes-config.ts), rate limits included,
    // index queries on exactly the indexes it names.
    for (const [name, access] of tableAccessOf(route)) {
      const { table, envVar } = tables[name]
      fn.bindTable(table, access, { envVar, indexNames: declaredIndexNames(route, name) })
    }
    return [route.operationId, fn] as const
  })
  return Object.fromEntries(entries) as Record<OperationId, PetstoreFunction>
}
