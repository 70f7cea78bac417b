import { describe, expect, it } from 'vitest'
import {
  createDocumentClient,
  DYNAMO_CLIENT_LIMITS,
  dynamoConfigFromEnv,
  worstCaseCallMs,
} from '#shared/data/dynamo-client.ts'

/** The function timeouts the CDK stack sets (infra/constructs: authorizer 5 s, pet functions 10 s). */
const AUTHORIZER_TIMEOUT_MS = 5_000

describe('DynamoDB client limits', () => {
  it('lets every attempt of a stalled call time out inside the shortest function timeout', () => {
    expect(worstCaseCallMs()).toBe(4_200)
    expect(worstCaseCallMs()).toBeLessThan(AUTHORIZER_TIMEOUT_MS)
  })

  it('gives the SDK client those limits and the configured endpoint', async () => {
    const config = dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' })
    expect(config).toMatchObject({
      endpoint: 'http://127.0.0.1:8000',
      maxAttempts: DYNAMO_CLIENT_LIMITS.maxAttempts,
      requestHandler: {
        connectionTimeout: DYNAMO_CLIENT_LIMITS.connectionTimeoutMs,
        requestTimeout: DYNAMO_CLIENT_LIMITS.requestTimeoutMs,
        throwOnRequestTimeout: true,
      },
    })
    expect(dynamoConfigFromEnv({})).not.toHaveProperty('endpoint')
    const client = createDocumentClient({ ...config, region: 'us-east-1' })
    expect(await client.config.maxAttempts()).toBe(2)
  })
})
