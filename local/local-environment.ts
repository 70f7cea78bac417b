import { createHash, randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import { ADDRESS_BLOCK_ENV } from '#functions/address-block/address-block-dependencies.ts'
import { keptSecret } from '#local/control-plane/kept-secret-file.ts'
import { formatMacSecrets, type MacSecrets } from '#shared/auth/project-key.ts'
import { CLIENT_LIMITS_VARIABLE, IN_PROCESS } from '#shared/data/dynamo-client.ts'
import { CORS_ALLOW_ORIGIN_VARIABLE } from '#shared/http/cors-headers.ts'
import { IN_MEMORY } from './embedded-dynamo.ts'
/** The tables `npm start` creates in its DynamoDB (docs/local-server.md names them). */
export const LOCAL_TABLES = {
  pets: 'petstore-local-pets',
  rateLimits: 'petstore-local-rate-limits',
  idempotency: 'petstore-local-idempotency',
  keyMirror: 'petstore-local-key-mirror',
  storeKeys: 'petstore-local-store-keys',
  /** The automatic block's counts and blocks (functions/address-block). */
  addressBlocks: 'petstore-local-address-blocks',
}

export interface LocalEnvironmentOptions {
  /** The DynamoDB endpoint the functions talk to. */
  endpoint: string
  /** True for the embedded DynamoDB, which accepts any credentials. */
  embedded: boolean
  /** The key of the cursors' tags (see localCursorSecret). */
  cursorSecret: string
  /** KEY_MAC_SECRETS of the local stage (localKeyMacSecrets). */
  macSecrets: MacSecrets
  /** The local stage's pool key, which store keys are metered under (the authorizer's POOL_USAGE_KEY). */
  poolKey: string
  /** This server's tables (localTableNames). */
  tables: LocalTableNames
  /** The stage's CORS origin, as CDK gives the functions (shared/http/cors-headers.ts). */
  corsAllowOrigin?: string
}

export type LocalTableNames = typeof LOCAL_TABLES

/**
 * The tables of one local server. The embedded DynamoDB lives in the data directory, so the names
 * can be fixed. On an external DynamoDB (`DYNAMODB_ENDPOINT`) the key mirror belongs to one control
 * plane, as on AWS it belongs to one stage: each data directory gets a mirror of its own, or one
 * server's sync would remove the other's keys (and a table of automatic blocks of its own, as its
 * blocks are of its own edge). A server with its data in memory keeps nothing, so
 * there every table is its own (servers one after another on DynamoDB Local start empty).
 */
export const localTableNames = (dataDir: string, embedded: boolean): LocalTableNames => {
  if (embedded) return LOCAL_TABLES
  if (dataDir === IN_MEMORY) {
    const suffix = randomBytes(6).toString('hex')
    return {
      pets: `${LOCAL_TABLES.pets}-${suffix}`,
      rateLimits: `${LOCAL_TABLES.rateLimits}-${suffix}`,
      idempotency: `${LOCAL_TABLES.idempotency}-${suffix}`,
      keyMirror: `${LOCAL_TABLES.keyMirror}-${suffix}`,
      storeKeys: `${LOCAL_TABLES.storeKeys}-${suffix}`,
      addressBlocks: `${LOCAL_TABLES.addressBlocks}-${suffix}`,
    }
  }
  const owner = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12)
  // The store keys belong to one control plane too: its pool key and MAC secret made them.
  return {
    ...LOCAL_TABLES,
    keyMirror: `${LOCAL_TABLES.keyMirror}-${owner}`,
    storeKeys: `${LOCAL_TABLES.storeKeys}-${owner}`,
    addressBlocks: `${LOCAL_TABLES.addressBlocks}-${owner}`,
  }
}

/**
 * The environment each function gets from CDK on AWS, pointed at the local tables. Values the
 * operator already set (region, credentials, Powertools switches) are kept.
 */
export const localFunctionEnvironment = (
  {
    endpoint,
    embedded,
    cursorSecret,
    macSecrets,
    poolKey,
    tables,
    corsAllowOrigin,
  }: LocalEnvironmentOptions,
  current: NodeJS.ProcessEnv = process.env,
): Record<string, string> => {
  const env: Record<string, string> = {
    TABLE_NAME: tables.pets,
    RATE_LIMIT_TABLE_NAME: tables.rateLimits,
    IDEMPOTENCY_TABLE_NAME: tables.idempotency,
    KEY_MIRROR_TABLE_NAME: tables.keyMirror,
    STORE_KEY_TABLE_NAME: tables.storeKeys,
    [ADDRESS_BLOCK_ENV.table]: tables.addressBlocks,
    CURSOR_SECRET: cursorSecret,
    KEY_MAC_SECRETS: formatMacSecrets(macSecrets),
    POOL_USAGE_KEY: poolKey,
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

/**
 * The local stage's MAC secret (version 1), as a deploy makes one per stage: kept in the data
 * directory, so the keys it made keep working after a restart; a fresh one per process with
 * `:memory:`, whose keys are gone with it anyway.
 */
export const localKeyMacSecrets = async (dataDir: string): Promise<MacSecrets> =>
  new Map([
    [
      1,
      dataDir === IN_MEMORY
        ? randomBytes(32).toString('hex')
        : await keptSecret(join(dataDir, KEY_MAC_SECRET_FILE)),
    ],
  ])

export const KEY_MAC_SECRET_FILE = 'key-mac-secret'
