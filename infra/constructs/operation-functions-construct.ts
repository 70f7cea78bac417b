import { Duration } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import { functionEntry } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import {
  API_VERSION_PATH,
  type OperationId,
  ROUTES,
  tableAccessOf,
} from '#shared/config/routes-config.ts'
import { TABLE_ACCESS_LEVELS } from '#shared/config/table-access-config.ts'
import { PET_TABLE } from '#shared/data/table-keys.ts'
import { CORS_ALLOW_ORIGIN_VARIABLE } from '#shared/http/cors-headers.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

export interface OperationFunctionsProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
  /** createPet's idempotency records. */
  idempotencyTable: ITable
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
  // Each table an operation can name in the route table, the variable that carries its name,
  // and the indexes a level with index grants (LIST) may query.
  const tables = {
    pets: { table: petTable, envVar: 'TABLE_NAME', indexNames: [PET_TABLE.statusIndex.name] },
    idempotency: { table: idempotencyTable, envVar: 'IDEMPOTENCY_TABLE_NAME', indexNames: [] },
    rateLimits: { table: rateLimitTable, envVar: 'RATE_LIMIT_TABLE_NAME', indexNames: [] },
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
    // Exactly the levels its route names (shared/config/routes-config.ts), rate limits included.
    for (const [name, access] of tableAccessOf(route)) {
      const { table, envVar, indexNames } = tables[name]
      const queriesIndexes = TABLE_ACCESS_LEVELS[access].some((grant) => grant.on === 'indexes')
      fn.bindTable(table, access, { envVar, ...(queriesIndexes ? { indexNames } : {}) })
    }
    return [route.operationId, fn] as const
  })
  return Object.fromEntries(entries) as Record<OperationId, PetstoreFunction>
}
