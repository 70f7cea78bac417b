import { optionalEnv, requireEnv } from '#shared/config/env-config.ts'
import { limiterAccessOf, type OperationId, routeOf } from '#shared/config/routes-config.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { CORS_ALLOW_ORIGIN_VARIABLE, corsHeaders } from '#shared/http/cors-headers.ts'
import type { HttpPipelineOptions } from '#shared/middleware/http-pipeline.ts'
import { observabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { rateLimitMiddleware } from '#shared/rate-limit/rate-limit-middleware.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import type { Clock } from '#shared/time/clock.ts'
import type { FunctionBase } from './function-dependencies.ts'

/** What every pet operation has: the HTTP pipeline's options and the pets. */
export interface PetOperationDependencies extends HttpPipelineOptions {
  pets: PetRepository
  clock: Clock
}

/**
 * The pet operations' share of the wiring, on a function's base: observability publishing with
 * the base's metrics (so what the rate limiter counts goes out with the rest), the route's rate
 * limiter, and the pet repository with its id allocator. A missing TABLE_NAME or
 * RATE_LIMIT_TABLE_NAME fails the cold start.
 */
export const petOperationDependencies = (
  operationId: OperationId,
  { env, logger, metrics, clock, dynamo }: FunctionBase,
): PetOperationDependencies => {
  const tableName = requireEnv('TABLE_NAME', env)
  const blockSize = Number(optionalEnv('ID_BLOCK_SIZE', env) ?? 50)
  const ids = new BlockIdAllocator({ client: dynamo, tableName, blockSize })
  const corsOrigin = optionalEnv(CORS_ALLOW_ORIGIN_VARIABLE, env)
  return {
    ...(corsOrigin ? { responseHeaders: corsHeaders(corsOrigin) } : {}),
    logger,
    observability: observabilityMiddlewares(operationId, { metrics }),
    clock,
    pets: new PetRepository({ client: dynamo, tableName, ids }),
    rateLimit: rateLimitMiddleware({
      limiter: new DynamoRateLimiter({
        client: dynamo,
        tableName: requireEnv('RATE_LIMIT_TABLE_NAME', env),
        clock,
      }),
      access: limiterAccessOf(routeOf(operationId)),
      logger,
      metrics,
    }),
  }
}
