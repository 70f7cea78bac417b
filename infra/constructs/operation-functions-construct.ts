import { Duration } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import { functionEntry } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { API_VERSION_PATH, type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { PET_TABLE } from '#shared/data/table-keys.ts'
import {
  PetstoreFunction,
  stageFunctionDefaults,
  type TableAccess,
} from './petstore-function-construct.ts'

export interface OperationFunctionsProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
  /** createPet's idempotency records. */
  idempotencyTable: ITable
}

const PET_TABLE_ACCESS: Record<OperationId, TableAccess> = {
  listPets: 'LIST',
  getPet: 'LOOKUP',
  createPet: 'APPEND',
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
    })
    // Each operation only what its repository calls: getPet one GetItem, listPets a Scan or a
    // Query of the status index, createPet a PutItem of the pet and an UpdateItem of the id
    // counter (it never reads pets).
    const petAccess = PET_TABLE_ACCESS[route.operationId]
    fn.bindTable(petTable, petAccess, {
      envVar: 'TABLE_NAME',
      ...(petAccess === 'LIST' ? { indexNames: [PET_TABLE.statusIndex.name] } : {}),
    })
    if (route.operationId === 'createPet') {
      fn.bindTable(idempotencyTable, 'RW', { envVar: 'IDEMPOTENCY_TABLE_NAME' })
    }
    // Every operation is rate limited: counters are read and updated item by item, never put.
    fn.bindTable(rateLimitTable, 'COUNT', { envVar: 'RATE_LIMIT_TABLE_NAME' })
    return [route.operationId, fn] as const
  })
  return Object.fromEntries(entries) as Record<OperationId, PetstoreFunction>
}
