import { createHash, randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import { keptSecret } from '#local/control-plane/kept-secret-file.ts'
import { CLIENT_LIMITS_VARIABLE, IN_PROCESS } from '#shared/data/dynamo-client.ts'
import { CORS_ALLOW_ORIGIN_VARIABLE } from '#shared/http/cors-headers.ts'
import { IN_MEMORY } from './embedded-dynamo.ts'
/** The tables `npm start` creates in its DynamoDB (docs/local-server.md names them). */
export const LOCAL_TABLES = {
  pets: 'petstore-local-pets',
  rateLimits: 'petstore-local-rate-limits',
  idempotency: 'petstore-local-idempotency',
  keyMirror: 'petstore-local-key-mirror',
}

export interface LocalEnvironmentOptions {
  /** The DynamoDB endpoint the functions talk to. */
  endpoint: string
  /** True for the embedded DynamoDB, which accepts any credentials. */
  embedded: boolean
  /** The key of the cursors' tags (see localCursorSecret). */
  cursorSecret: string
  /** The key mirror of this server's control plane (see localKeyMirrorTable). */
  keyMirrorTable: string
  /** The stage's CORS origin, as CDK gives the functions (shared/http/cors-headers.ts). */
  corsAllowOrigin?: string
}

/**
 * The key mirror belongs to one control plane, as on AWS it belongs to one stage. The embedded
 * DynamoDB lives in the data directory, so its name can be fixed; servers sharing one external
 * DynamoDB (`DYNAMODB_ENDPOINT`) each get the mirror of their own data directory (`:memory:`: of
 * their own process), or one server's sync would remove the other's keys.
 */
export const localKeyMirrorTable = (dataDir: string, embedded: boolean): string => {
  if (embedded) return LOCAL_TABLES.keyMirror
  const owner = dataDir === IN_MEMORY ? randomBytes(8).toString('hex') : resolve(dataDir)
  return `${LOCAL_TABLES.keyMirror}-${createHash('sha256').update(owner).digest('hex').slice(0, 12)}`
}

/**
 * The environment each function gets from CDK on AWS, pointed at the local tables. Values the
 * operator already set (region, credentials, Powertools switches) are kept.
 */
export const localFunctionEnvironment = (
  { endpoint, embedded, cursorSecret, keyMirrorTable, corsAllowOrigin }: LocalEnvironmentOptions,
  current: NodeJS.ProcessEnv = process.env,
): Record<string, string> => {
  const env: Record<string, string> = {
    TABLE_NAME: LOCAL_TABLES.pets,
    RATE_LIMIT_TABLE_NAME: LOCAL_TABLES.rateLimits,
    IDEMPOTENCY_TABLE_NAME: LOCAL_TABLES.idempotency,
    KEY_MIRROR_TABLE_NAME: keyMirrorTable,
    CURSOR_SECRET: cursorSecret,
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: current.AWS_REGION ?? 'us-east-1',
  }
  if (corsAllowOrigin) env[CORS_ALLOW_ORIGIN_VARIABLE] = corsAllowOrigin
  // The embedded DynamoDB runs in this process: time limits for that, not for a network.
  if (embedded) env[CLIENT_LIMITS_VARIABLE] = IN_PROCESS
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
 * The local stage's cursor secret, as a deploy makes one per stage: kept in the data directory
 * (keptSecret), so cursors survive a restart; a fresh one per process with `:memory:`, which
 * keeps no data for a cursor to point into anyway.
 */
export const localCursorSecret = async (dataDir: string): Promise<string> =>
  dataDir === IN_MEMORY
    ? randomBytes(32).toString('hex')
    : keptSecret(join(dataDir, CURSOR_SECRET_FILE))

export const CURSOR_SECRET_FILE = 'cursor-secret'
