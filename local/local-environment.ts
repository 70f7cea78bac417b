import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { IN_MEMORY } from './embedded-dynamo.ts'
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
  /** The key of the cursors' tags (see localCursorSecret). */
  cursorSecret: string
}

/**
 * The environment each function gets from CDK on AWS, pointed at the local tables. Values the
 * operator already set (region, credentials, Powertools switches) are kept.
 */
export const localFunctionEnvironment = (
  { endpoint, embedded, cursorSecret }: LocalEnvironmentOptions,
  current: NodeJS.ProcessEnv = process.env,
): Record<string, string> => {
  const env: Record<string, string> = {
    TABLE_NAME: LOCAL_TABLES.pets,
    RATE_LIMIT_TABLE_NAME: LOCAL_TABLES.rateLimits,
    IDEMPOTENCY_TABLE_NAME: LOCAL_TABLES.idempotency,
    CURSOR_SECRET: cursorSecret,
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

/**
 * The local stage's cursor secret, as a deploy makes one per stage: random on first start and
 * kept in the data directory (owner-only), so cursors survive a restart; a fresh one per process
 * with `:memory:`, which keeps no data for a cursor to point into anyway.
 */
export const localCursorSecret = async (dataDir: string): Promise<string> => {
  if (dataDir === IN_MEMORY) return randomBytes(32).toString('hex')
  const file = join(dataDir, CURSOR_SECRET_FILE)
  try {
    return (await readFile(file, 'utf8')).trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const secret = randomBytes(32).toString('hex')
  // wx: two servers starting on one directory keep the first secret.
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' }).catch(async (error) => {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  })
  return (await readFile(file, 'utf8')).trim()
}

export const CURSOR_SECRET_FILE = 'cursor-secret'
