import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import { logger } from '#shared/observability/logger.ts'
import { authorizerObservabilityMiddlewares } from '#shared/observability/observability-middleware.ts'
import { tracer } from '#shared/observability/tracer.ts'
import { ApiGatewayKeyStore, enterpriseLimitsFromEnv } from './api-gateway-key-store.ts'
import { createAuthorizerHandler } from './authorizer-handler.ts'

// Module scope: one client and one key snapshot cache per instance, reused by every invocation.
const keyStore = new ApiGatewayKeyStore({
  client: tracer.captureAWSv3Client(new APIGatewayClient({ maxAttempts: 3 })),
  enterpriseLimits: enterpriseLimitsFromEnv(),
  logger,
})

export const handler = createAuthorizerHandler({ keyStore, logger }).use(
  authorizerObservabilityMiddlewares(),
)
