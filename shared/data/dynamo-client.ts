import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'

/**
 * Time limits of every DynamoDB call, so a stalled connection becomes a 503 (the error handler
 * maps the SDK's TimeoutError to service_unavailable) long before the Lambda timeout would turn
 * it into a 500. The arithmetic, for the SDK this project pins (@smithy/node-http-handler 4,
 * the standard retry strategy with its 2026 defaults):
 * - one attempt: `requestTimeout` starts with the request, so it also covers connecting and the
 *   TLS handshake; `connectionTimeout` (TCP connect only) is nested inside it and only fails a
 *   dead endpoint sooner. One attempt therefore lasts at most max(0.3, 1.0) = 1.0 s.
 * - backoff before retry i (from 0): random x base x 2^i, base 25 ms (DynamoDB's; 50 ms for
 *   other services) for timeouts, dropped connections and 5xx, 1,000 ms for throttling; with 2
 *   attempts, one wait of at most 1.0 s.
 * - worst case of one call: 2 x 1.0 s + 1.0 s = 3.0 s (a throttled answer that itself took the
 *   whole request timeout); a stalled DynamoDB: 2 x 1.0 s + 0.025 s. Both well inside
 *   the authorizer's 5 s timeout; the pet functions (10 s) make at most three sequential calls
 *   on a path that can still answer (limiter, id block, put), 9 s at the very worst.
 * DynamoDB sends no Retry-After; a server that did could stretch the wait by up to 5 s (the SDK
 * honours such a hint). `requestTimeout` bounds the whole exchange; DynamoDB answers item calls
 * and 1 MB pages in milliseconds, so 1 s only cuts off calls that have stalled.
 */
export interface DynamoClientLimits {
  connectionTimeoutMs: number
  requestTimeoutMs: number
  maxAttempts: number
  /** The longest wait the SDK puts between two attempts (throttling: 1,000 ms x 2^0). */
  maxBackoffMs: number
}

export const DYNAMO_CLIENT_LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 300,
  requestTimeoutMs: 1_000,
  maxAttempts: 2,
  maxBackoffMs: 1_000,
}

/** The longest one DynamoDB call can take with these limits (the arithmetic above). */
export const worstCaseCallMs = (limits: DynamoClientLimits = DYNAMO_CLIENT_LIMITS) =>
  limits.maxAttempts * Math.max(limits.connectionTimeoutMs, limits.requestTimeoutMs) +
  (limits.maxAttempts - 1) * limits.maxBackoffMs

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
