import type {
  AttributeDefinition,
  CreateTableCommandInput,
  GlobalSecondaryIndex,
} from '@aws-sdk/client-dynamodb'
import {
  type IndexDefinition,
  type IndexedTable,
  indexesOf,
  TABLE_INDEXES,
} from '#shared/config/table-indexes-config.ts'

// The key layout of each table (keys, TTL attribute) and the CreateTable input made of it, its
// indexes included (shared/config/table-indexes-config.ts).

/**
 * Key design of the pet table, shared by the repository, the local bootstrap and the CDK stack.
 * Pets live at `pk = PET#<id>`; the id counter at `pk = COUNTER#pet`. Its indexes are in
 * TABLE_INDEXES.pets (the status index: `TABLE_INDEXES.pets.status`).
 */
export const PET_TABLE = {
  partitionKey: 'pk',
  petKeyPrefix: 'PET#',
  idCounterKey: 'COUNTER#pet',
} as const

export const petKey = (id: number): { pk: string } => ({ pk: `${PET_TABLE.petKeyPrefix}${id}` })

/** An index as CreateTable (and UpdateTable's Create) take it: every attribute projected. */
export const globalSecondaryIndexOf = (index: IndexDefinition): GlobalSecondaryIndex => ({
  IndexName: index.indexName,
  KeySchema: [
    { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
    ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
  ],
  Projection: { ProjectionType: 'ALL' },
})

/** The key attributes of an index, as AttributeDefinitions. */
export const indexAttributesOf = (index: IndexDefinition): AttributeDefinition[] =>
  [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])].map((key) => ({
    AttributeName: key.name,
    AttributeType: key.type,
  }))

/**
 * CreateTable input of a table keyed by one string partition key, billed per request, with every
 * index TABLE_INDEXES gives it: the one definition the CDK, local and test tables are made from.
 */
const tableDefinition = (
  tableName: string,
  partitionKey: string,
  table: IndexedTable,
): CreateTableCommandInput => {
  const indexes = indexesOf(table).map(([, index]) => index)
  const attributes = new Map<string, AttributeDefinition>([
    [partitionKey, { AttributeName: partitionKey, AttributeType: 'S' }],
  ])
  for (const attribute of indexes.flatMap(indexAttributesOf)) {
    attributes.set(attribute.AttributeName as string, attribute)
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes.values()],
    KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
    ...(indexes.length > 0 ? { GlobalSecondaryIndexes: indexes.map(globalSecondaryIndexOf) } : {}),
  }
}

/** CreateTable input for local and test tables (the CDK stack declares the same keys). */
export const petTableDefinition = (tableName: string): CreateTableCommandInput =>
  tableDefinition(tableName, PET_TABLE.partitionKey, 'pets')

/** The status index of the pet table (listPets' filtered pages). */
export const PET_STATUS_INDEX = TABLE_INDEXES.pets.status

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
  tableDefinition(tableName, RATE_LIMIT_TABLE.partitionKey, 'rateLimits')

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
  tableDefinition(tableName, KEY_MIRROR_TABLE.partitionKey, 'keyMirror')

/**
 * Store keys: keys that live only in the project's store, beyond API Gateway's 10,000 per account
 * and Region. One item per key, keyed by its id (`s-` and 10 letters and digits, carried in the
 * key's value), holding the SHA-256 of the value, never the value (store-key-item.ts). The
 * authorizer reads one item by id; the keys CLI writes them. The key sync never touches it.
 */
export const STORE_KEY_TABLE = { partitionKey: 'keyId' } as const

export const storeKeyTableDefinition = (tableName: string): CreateTableCommandInput =>
  tableDefinition(tableName, STORE_KEY_TABLE.partitionKey, 'storeKeys')

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
  tableDefinition(tableName, IDEMPOTENCY_TABLE.partitionKey, 'idempotency')
