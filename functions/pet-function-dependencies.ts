import { optionalEnv, requireEnv } from '#shared/config/env-config.ts'
import { type OperationId, routeOf } from '#shared/config/routes-config.ts'
import { CursorCodec } from '#shared/data/cursor-codec.ts'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import type { HttpPipelineOptions } from '#shared/middleware/http-pipeline.ts'
import { logger } from '#shared/observability/logger.ts'
import { createMetrics } from '#shared/observability/metrics.ts'
import { observabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { rateLimitMiddleware } from '#shared/rate-limit/rate-limit-middleware.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'

export interface PetFunctionDependencies extends HttpPipelineOptions {
  pets: PetRepository
  clock: Clock
}

/**
 * Everything a pet function needs, built once per process from its environment. Called at
 * module scope by each `*-lambda.ts` entry, so a missing variable fails the cold start.
 */
export const petFunctionDependencies = (
  operationId: OperationId,
  env: NodeJS.ProcessEnv = process.env,
): PetFunctionDependencies => withClient(operationId, env).deps

/**
 * listPets' dependencies: a pet function's plus the cursor codec, keyed by the stage's secret
 * (made at deploy time in Secrets Manager; locally kept in the data directory). Only listPets
 * gets the secret.
 */
export const listPetsFunctionDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): PetFunctionDependencies & { cursors: CursorCodec } => ({
  ...withClient('listPets', env).deps,
  cursors: new CursorCodec(requireEnv('CURSOR_SECRET', env)),
})

/** createPet's dependencies: a pet function's plus the idempotency records (its own table). */
export const createPetFunctionDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): PetFunctionDependencies & { idempotency: IdempotencyRepository } => {
  const { deps, client } = withClient('createPet', env)
  const tableName = requireEnv('IDEMPOTENCY_TABLE_NAME', env)
  return { ...deps, idempotency: new IdempotencyRepository({ client, tableName }) }
}

const withClient = (operationId: OperationId, env: NodeJS.ProcessEnv) => {
  const tableName = requireEnv('TABLE_NAME', env)
  const client = createDocumentClient(dynamoConfigFromEnv(env))
  const blockSize = Number(optionalEnv('ID_BLOCK_SIZE', env) ?? 50)
  const ids = new BlockIdAllocator({ client, tableName, blockSize })
  // One metrics instance per function: what the rate limiter counts is published with the rest.
  const metrics = createMetrics(operationId)
  const deps: PetFunctionDependencies = {
    logger,
    observability: observabilityMiddlewares(operationId, { metrics }),
    clock: systemClock,
    pets: new PetRepository({ client, tableName, ids }),
    rateLimit: rateLimitMiddleware({
      limiter: new DynamoRateLimiter({
        client,
        tableName: requireEnv('RATE_LIMIT_TABLE_NAME', env),
        clock: systemClock,
      }),
      access: routeOf(operationId).access,
      logger,
      metrics,
    }),
  }
  return { deps, client }
}
