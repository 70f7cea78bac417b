import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'

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

/**
 * Local only: the functions of `npm start` share one process with its embedded DynamoDB and with
 * every request in flight (on Lambda an instance serves one request at a time). A burst queues
 * behind that one event loop for seconds, never behind a network, so the AWS limits above would
 * fail healthy calls (200 pipelined requests: 199 answered 503, the limiter admitting uncounted).
 * A call gets what the local function timeout (10 s, a 503 at 9.5 s) leaves; the function's
 * deadline, not the SDK, ends one that really hangs.
 */
export const IN_PROCESS_CLIENT_LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 5_000,
  // 9 s: the pet functions' 10 s less a second to answer.
  requestTimeoutMs: FUNCTION_TIMEOUT_SECONDS.createPet * 1_000 - 1_000,
  maxAttempts: 2,
  maxBackoffMs: 1_000,
}

/**
 * The bench's counting runs only (bench/support/bench-child.ts), where DynamoDB is answered in
 * memory and nothing can stall: no deadline at all (0 turns the SDK's connection and request
 * timers off), so none can fire on a busy machine, or under valgrind, and add a retry to the
 * calls counted.
 */
export const NO_DEADLINE_CLIENT_LIMITS: DynamoClientLimits = {
  ...DYNAMO_CLIENT_LIMITS,
  connectionTimeoutMs: 0,
  requestTimeoutMs: 0,
}

/**
 * Set by the local server (`in-process`) and the bench (`no-deadline`) alone; the stacks never
 * pass it, so deployed functions keep the AWS limits.
 */
export const CLIENT_LIMITS_VARIABLE = 'DYNAMODB_CLIENT_LIMITS'
export const IN_PROCESS = 'in-process'
export const NO_DEADLINE = 'no-deadline'

/** The limits the environment asks for; an unknown value fails the cold start, not a request. */
export const dynamoClientLimitsFromEnv = (
  env: NodeJS.ProcessEnv = process.env,
): DynamoClientLimits => {
  const name = env[CLIENT_LIMITS_VARIABLE]
  if (name === undefined || name === '') return DYNAMO_CLIENT_LIMITS
  if (name === IN_PROCESS) return IN_PROCESS_CLIENT_LIMITS
  if (name === NO_DEADLINE) return NO_DEADLINE_CLIENT_LIMITS
  throw new Error(
    `${CLIENT_LIMITS_VARIABLE} must be "${IN_PROCESS}", "${NO_DEADLINE}" or unset, got "${name}"`,
  )
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
): DynamoDBDocumentClient => {
  const client = new DynamoDBClient(config)
  withoutSdkLogging(client)
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
    unmarshallOptions: { wrapNumbers: true },
  })
}

/**
 * Takes out the SDK's logger middleware. These clients have no `logger` (the SDK's no-op one),
 * yet the middleware still builds a redacted copy of every call's input and output for it
 * (`logger?.info?.(...)` evaluates its arguments when the no-op `info` exists), a visible share
 * of a warm invocation's CPU (docs/performance.md). Errors still reach the caller, who logs them
 * with Powertools.
 */
const withoutSdkLogging = (client: DynamoDBClient): void => {
  client.middlewareStack.remove('loggerMiddleware')
}

export const dynamoConfigFromEnv = (
  env: NodeJS.ProcessEnv = process.env,
  limits: DynamoClientLimits = dynamoClientLimitsFromEnv(env),
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
