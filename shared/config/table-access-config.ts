/**
 * What a function may do to a table, one level per need, each level the DynamoDB actions it
 * grants and no others (least privilege per operation). The route table names a level per table
 * for every operation; the CDK grants exactly these actions and the local IAM check in the tests
 * refuses any other, so a level that is too narrow fails a test and one too wide fails the rule
 * on the synthesized template. Actions: https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
 * LOOKUP: single-item reads by key (getPet on pets, the authorizer on the key mirror).
 * LIST: a scan of the table and queries of the indexes the route names (listPets: unfiltered
 * pages scan, filtered ones query the status index).
 * QUERY: queries of the indexes the route names, no scan and no read by key (a listing every page
 * of which an index serves).
 * APPEND: puts and updates, no reads (createPet on pets: the pet, the id counter).
 * REMOVE: single-item deletes by key, no reads (a delete that learns what it removed from
 * `ReturnValues: ALL_OLD`).
 * COUNT: single-item reads and updates, no puts or scans (the rate limiter's counters).
 * RW: single-item reads and writes, no scans (the idempotency records).
 * REBUILD: a keys-only scan and batch puts and deletes, no single-item calls (the key sync on the
 * key mirror; BatchWriteItem is authorized as itself, not as PutItem or DeleteItem).
 */
export const TABLE_ACCESS_LEVELS = {
  LOOKUP: [{ on: 'table', actions: ['GetItem'] }],
  LIST: [
    { on: 'table', actions: ['Scan'] },
    { on: 'indexes', actions: ['Query'] },
  ],
  QUERY: [{ on: 'indexes', actions: ['Query'] }],
  APPEND: [{ on: 'table', actions: ['PutItem', 'UpdateItem'] }],
  REMOVE: [{ on: 'table', actions: ['DeleteItem'] }],
  COUNT: [{ on: 'table', actions: ['GetItem', 'UpdateItem'] }],
  RW: [{ on: 'table', actions: ['GetItem', 'PutItem', 'UpdateItem'] }],
  REBUILD: [{ on: 'table', actions: ['Scan', 'BatchWriteItem'] }],
} as const satisfies Record<string, readonly TableGrant[]>

export type DynamoAction =
  | 'GetItem'
  | 'Query'
  | 'Scan'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem'

export interface TableGrant {
  /** The table itself, or the indexes the route names (its entry's `indexes`). */
  on: 'table' | 'indexes'
  actions: readonly DynamoAction[]
}

export type TableAccess = keyof typeof TABLE_ACCESS_LEVELS

/** Actions that change a table: a route holding one on any table is a write. */
export const WRITE_ACTIONS: readonly DynamoAction[] = [
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
]

/** The DynamoDB actions a level grants, on the table and its indexes together. */
export const actionsOf = (access: TableAccess): DynamoAction[] =>
  TABLE_ACCESS_LEVELS[access].flatMap((grant: TableGrant) => [...grant.actions])

/** A level's grants on indexes: on exactly the indexes the route names, none when it has none. */
export const indexGrantsOf = (access: TableAccess): readonly TableGrant[] =>
  (TABLE_ACCESS_LEVELS[access] as readonly TableGrant[]).filter((grant) => grant.on === 'indexes')
