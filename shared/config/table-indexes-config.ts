/**
 * Every global secondary index of the API's tables, each defined once here. The CDK tables, the
 * local server's tables and the test tables are all made from it (shared/data/table-keys.ts
 * builds their CreateTable input), the repositories query by it, and an operation names the
 * indexes it reads in its route entry (`indexes`, shared/config/routes-config.ts): its role may
 * Query those and no others. A new index: docs/adding-an-operation.md, "A new index".
 */

/** One key attribute of an index, with its DynamoDB type (S string, N number, B binary). */
export interface IndexKey {
  name: string
  type: 'S' | 'N' | 'B'
}

export interface IndexDefinition {
  /** The index's name in DynamoDB, and in its ARN (`…:table/<table>/index/<indexName>`). */
  indexName: string
  partitionKey: IndexKey
  sortKey?: IndexKey
}

/** Per table, its indexes by the name the route table and the repositories use. */
export const TABLE_INDEXES = {
  pets: {
    // Sparse: pets without a status are not in it, so they appear only in unfiltered lists.
    status: {
      indexName: 'status-id-index',
      partitionKey: { name: 'status', type: 'S' },
      sortKey: { name: 'id', type: 'N' },
    },
  },
  idempotency: {},
  rateLimits: {},
  keyMirror: {},
  storeKeys: {},
  addressBlocks: {},
} as const satisfies Record<string, Record<string, IndexDefinition>>

export type IndexedTable = keyof typeof TABLE_INDEXES

/** The index names a table's route entries may declare, e.g. `'status'` for pets. */
export type IndexOf<Table extends IndexedTable> = keyof (typeof TABLE_INDEXES)[Table] & string

/** A table's indexes, in the order they are defined. */
export const indexesOf = (table: IndexedTable): [string, IndexDefinition][] =>
  Object.entries(TABLE_INDEXES[table] as Record<string, IndexDefinition>)
