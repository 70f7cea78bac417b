import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import { functionEntry } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { API_VERSION_PATH, type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { PET_TABLE } from '#shared/data/table-schema.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

export interface OperationFunctionsProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
}

const pascalCase = (operationId: string): string =>
  operationId.charAt(0).toUpperCase() + operationId.slice(1)

/**
 * One function per route of the shared route table (id `ListPets` etc., in `scope` itself: see
 * PetstoreApi), each bound to the tables it needs and no more.
 */
export const addOperationFunctions = (
  scope: Construct,
  { config, petTable, rateLimitTable }: OperationFunctionsProps,
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
    })
    if (route.access === 'read') {
      fn.bindTable(petTable, 'RO', {
        envVar: 'TABLE_NAME',
        indexNames: [PET_TABLE.statusIndex.name],
      })
    } else {
      // create: PutItem of the pet, UpdateItem of the id counter; never Scan or Query.
      fn.bindTable(petTable, 'RW', { envVar: 'TABLE_NAME' })
    }
    // Every operation is rate limited: counters are read and updated item by item.
    fn.bindTable(rateLimitTable, 'RW', { envVar: 'RATE_LIMIT_TABLE_NAME' })
    return [route.operationId, fn] as const
  })
  return Object.fromEntries(entries) as Record<OperationId, PetstoreFunction>
}
