import type { Logger } from '@aws-lambda-powertools/logger'
import type { Metrics } from '@aws-lambda-powertools/metrics'
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import { logger } from '#shared/observability/logger.ts'
import { createMetrics } from '#shared/observability/metrics.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'

/**
 * What every function's wiring starts from. Each `functions/<fn>/<fn>-dependencies.ts` builds on
 * it, once per instance at module scope, and adds what its handler needs.
 */
export interface FunctionBase {
  /** The environment the function was built from (tests pass their own). */
  env: NodeJS.ProcessEnv
  logger: Logger
  /** Every metric carries the function's `operation` dimension. */
  metrics: Metrics
  clock: Clock
  /** The instance's one DynamoDB client, shared by its repositories. */
  dynamo: DynamoDBDocumentClient
}

/**
 * @example
 * // functions/get-pet/get-pet-dependencies.ts
 * const base = functionBase('getPet', env)
 * const pets = new PetRepository({ client: base.dynamo, tableName: requireEnv('TABLE_NAME', env), ids })
 */
export const functionBase = (
  operation: string,
  env: NodeJS.ProcessEnv = process.env,
): FunctionBase => ({
  env,
  logger,
  metrics: createMetrics(operation, env),
  clock: systemClock,
  dynamo: createDocumentClient(dynamoConfigFromEnv(env)),
})
