/** The tables `npm start` creates in its DynamoDB (the README names them). */
export const LOCAL_TABLES = {
  pets: 'petstore-local-pets',
  rateLimits: 'petstore-local-rate-limits',
  idempotency: 'petstore-local-idempotency',
}

export interface LocalEnvironmentOptions {
  /** The DynamoDB endpoint the functions talk to. */
  endpoint: string
  /** True for the embedded DynamoDB, which accepts any credentials. */
  embedded: boolean
}

/**
 * The environment each function gets from CDK on AWS, pointed at the local tables. Values the
 * operator already set (region, credentials, Powertools switches) are kept.
 */
export const localFunctionEnvironment = (
  { endpoint, embedded }: LocalEnvironmentOptions,
  current: NodeJS.ProcessEnv = process.env,
): Record<string, string> => {
  const env: Record<string, string> = {
    TABLE_NAME: LOCAL_TABLES.pets,
    RATE_LIMIT_TABLE_NAME: LOCAL_TABLES.rateLimits,
    IDEMPOTENCY_TABLE_NAME: LOCAL_TABLES.idempotency,
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: current.AWS_REGION ?? 'us-east-1',
  }
  if (embedded || !current.AWS_ACCESS_KEY_ID) {
    // The embedded DynamoDB accepts any credentials; the SDK insists on having some.
    env.AWS_ACCESS_KEY_ID = current.AWS_ACCESS_KEY_ID ?? 'local'
    env.AWS_SECRET_ACCESS_KEY = current.AWS_SECRET_ACCESS_KEY ?? 'local'
  }
  // No CloudWatch here: keep EMF metrics off, logs to warnings.
  env.POWERTOOLS_METRICS_DISABLED = current.POWERTOOLS_METRICS_DISABLED ?? 'true'
  env.POWERTOOLS_LOG_LEVEL = current.POWERTOOLS_LOG_LEVEL ?? 'WARN'
  return env
}
