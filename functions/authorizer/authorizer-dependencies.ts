import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import { logger } from '#shared/observability/logger.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { tracer } from '#shared/observability/tracer.ts'
import { ApiGatewayKeyStore, enterpriseLimitsFromEnv } from './api-gateway-key-store.ts'
import type { AuthorizerDependencies } from './authorizer-handler.ts'

/**
 * Everything the authorizer needs, built once per process from its environment. Called at module
 * scope by authorizer-lambda.ts: one client and one key snapshot cache per instance, reused by
 * every invocation, and a malformed ENTERPRISE_LIMITS fails the cold start.
 */
export const authorizerDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): AuthorizerDependencies => ({
  keyStore: new ApiGatewayKeyStore({
    client: tracer.captureAWSv3Client(new APIGatewayClient({ maxAttempts: 3 })),
    enterpriseLimits: enterpriseLimitsFromEnv(env),
    logger,
  }),
  logger,
  observability: authorizerObservabilityMiddlewares(),
})
