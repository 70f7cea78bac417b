import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'

/**
 * Time limits of every DynamoDB call, so a stalled connection becomes a 503 (the error handler
 * maps the SDK's TimeoutError to service_unavailable) long before the Lambda timeout would turn
 * it into a 500. Worst case per call: `maxAttempts` x (connect + request) plus the SDK's backoff
 * between attempts (the standard retry strategy waits a random 0..100 ms x 2^attempt, so at most
 * 200 ms here): 2 x (0.5 + 1.5) s + 0.2 s = 4.2 s, inside the authorizer's 5 s timeout and the
 * pet functions' 10 s. `requestTimeout` bounds a whole request and its response; DynamoDB answers
 * item calls and 1 MB pages in milliseconds, so 1.5 s only cuts off calls that have stalled.
 */
export interface DynamoClientLimits {
  connectionTimeoutMs: number
  requestTimeoutMs: number
  maxAttempts: number
  maxBackoffMs: number
}

export const DYNAMO_CLIENT_LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 500,
  requestTimeoutMs: 1_500,
  maxAttempts: 2,
  /** The SDK's standard retry strategy: at most base delay x 2^(attempts - 1). */
  maxBackoffMs: 200,
}

/** The longest one DynamoDB call can take with DYNAMO_CLIENT_LIMITS (the arithmetic above). */
export const worstCaseCallMs = (limits: DynamoClientLimits = DYNAMO_CLIENT_LIMITS) =>
  limits.maxAttempts * (limits.connectionTimeoutMs + limits.requestTimeoutMs) + limits.maxBackoffMs

/**
 * One document client per process, created at module scope by each function entry.
 * Numbers come back wrapped (NumberValue) so int64 attributes are never rounded.
 * `DYNAMODB_ENDPOINT` points the SDK at the embedded DynamoDB, DynamoDB Local or another endpoint.
 */
export const createDocumentClient = (
  config: DynamoDBClientConfig = dynamoConfigFromEnv(),
): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient(config), {
    marshallOptions: { removeUndefinedValues: true },
    unmarshallOptions: { wrapNumbers: true },
  })

export const dynamoConfigFromEnv = (
  env: NodeJS.ProcessEnv = process.env,
  limits: DynamoClientLimits = DYNAMO_CLIENT_LIMITS,
): DynamoDBClientConfig => {
  const endpoint = env.DYNAMODB_ENDPOINT
  return {
    ...(endpoint ? { endpoint } : {}),
    maxAttempts: limits.maxAttempts,
    // The options form: the SDK builds its NodeHttpHandler with these limits.
    requestHandler: {
      connectionTimeout: limits.connectionTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Without this, Smithy only logs a warning when requestTimeout passes (its types say so).
      throwOnRequestTimeout: true,
    },
  }
}
