import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb'

// The key layout of each table (keys, index, TTL attribute) and the CreateTable input made of it.

/**
 * Key design of the pet table, shared by the repository, the local bootstrap and the CDK stack.
 * Pets live at `pk = PET#<id>`; the id counter at `pk = COUNTER#pet`. The status GSI is sparse:
 * pets without a status are not in it, so they appear only in unfiltered lists.
 */
export const PET_TABLE = {
  partitionKey: 'pk',
  statusIndex: { name: 'status-id-index', partitionKey: 'status', sortKey: 'id' },
  petKeyPrefix: 'PET#',
  idCounterKey: 'COUNTER#pet',
} as const

export const petKey = (id: number): { pk: string } => ({ pk: `${PET_TABLE.petKeyPrefix}${id}` })

/** CreateTable input for local and test tables (the CDK stack declares the same keys). */
export const petTableDefinition = (tableName: string): CreateTableCommandInput => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [
    { AttributeName: PET_TABLE.partitionKey, AttributeType: 'S' },
    { AttributeName: PET_TABLE.statusIndex.partitionKey, AttributeType: 'S' },
    { AttributeName: PET_TABLE.statusIndex.sortKey, AttributeType: 'N' },
  ],
  KeySchema: [{ AttributeName: PET_TABLE.partitionKey, KeyType: 'HASH' }],
  GlobalSecondaryIndexes: [
    {
      IndexName: PET_TABLE.statusIndex.name,
      KeySchema: [
        { AttributeName: PET_TABLE.statusIndex.partitionKey, KeyType: 'HASH' },
        { AttributeName: PET_TABLE.statusIndex.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'ALL' },
    },
  ],
})

/** A table keyed by one string partition key, billed per request. */
const stringKeyTable = (tableName: string, partitionKey: string): CreateTableCommandInput => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: 'S' }],
  KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
})

/**
 * Rate-limit counters live in a table of their own (no pet scan ever reads them), one item
 * per key and UTC day (`<keyId>#<yyyy-mm-dd>`, see shared/rate-limit/rate-limiter.ts), removed
 * by DynamoDB TTL on `expiresAt` (Unix seconds) after the day.
 */
export const RATE_LIMIT_TABLE = {
  partitionKey: 'pk',
  ttlAttribute: 'expiresAt',
} as const

export const rateLimitTableDefinition = (tableName: string): CreateTableCommandInput =>
  stringKeyTable(tableName, RATE_LIMIT_TABLE.partitionKey)

/**
 * The key mirror: one table per stage, one item per API key usable on that stage, keyed by the
 * SHA-256 (hex) of the key value (the value itself is never stored). Rebuilt from API Gateway by
 * the key-sync function; read by the authorizer with one GetItem. Items and hashing live in
 * shared/data/key-mirror-item.ts.
 */
export const KEY_MIRROR_TABLE = {
  partitionKey: 'keyHash',
  /**
   * The key sync's own item (its lease and guard state: key-sync-state-repository.ts). `#` can
   * never start a hex hash, so no key can look it up, and the sync's scan skips it.
   */
  syncStateKey: '#key-sync',
} as const

export const keyMirrorTableDefinition = (tableName: string): CreateTableCommandInput =>
  stringKeyTable(tableName, KEY_MIRROR_TABLE.partitionKey)

/**
 * Store keys: keys that live only in the project's store, beyond API Gateway's 10,000 per account
 * and Region. One item per key, keyed by its id (`s-` and 10 letters and digits, carried in the
 * key's value), holding the SHA-256 of the value, never the value (store-key-item.ts). The
 * authorizer reads one item by id; the keys CLI writes them. The key sync never touches it.
 */
export const STORE_KEY_TABLE = { partitionKey: 'keyId' } as const

export const storeKeyTableDefinition = (tableName: string): CreateTableCommandInput =>
  stringKeyTable(tableName, STORE_KEY_TABLE.partitionKey)

/**
 * Idempotency records of createPet: one item per (API key, Idempotency-Key), keyed by the SHA-256
 * (hex) of both (see shared/data/idempotency-repository.ts), removed by DynamoDB TTL on
 * `expiresAt` (Unix seconds) once the 24-hour window has passed.
 */
export const IDEMPOTENCY_TABLE = {
  partitionKey: 'pk',
  ttlAttribute: 'expiresAt',
} as const

export const idempotencyTableDefinition = (tableName: string): CreateTableCommandInput =>
  stringKeyTable(tableName, IDEMPOTENCY_TABLE.partitionKey)
