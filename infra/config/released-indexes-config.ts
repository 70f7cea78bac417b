/**
 * The global secondary indexes each table had in production after the last release: what a
 * deploy of this assembly starts from. CloudFormation adds or deletes one index per table
 * update, starts it and goes on without waiting for its backfill, and a deploy that both adds and
 * deletes an index fails (AWS::DynamoDB::Table, GlobalSecondaryIndexes, CloudFormation User
 * Guide; UpdateTable: "You can create or delete only one global secondary index per UpdateTable
 * operation", DynamoDB API Reference). So a table's indexes may differ from this record by one
 * index at most; the data stack refuses to synthesize otherwise. Add an index here once the
 * release that created it has it ACTIVE in production (docs/adding-an-operation.md, "A new
 * index"); until then it is the one new index the next deploys may carry.
 */
export const RELEASED_INDEXES: Record<string, readonly string[]> = {
  pets: ['status-id-index'],
  rateLimits: [],
  idempotency: [],
  keyMirror: [],
  storeKeys: [],
}

/**
 * What is wrong with deploying a table with these indexes over the released ones: more than one
 * index added or deleted in one deploy. Undefined when one deploy can make the change.
 */
export const indexChangeProblem = (
  table: string,
  indexNames: readonly string[],
  released: readonly string[] = RELEASED_INDEXES[table] ?? [],
): string | undefined => {
  const added = indexNames.filter((name) => !released.includes(name))
  const deleted = released.filter((name) => !indexNames.includes(name))
  if (added.length + deleted.length <= 1) return undefined
  const change = [
    ...(added.length > 0 ? [`adds ${added.join(', ')}`] : []),
    ...(deleted.length > 0 ? [`deletes ${deleted.join(', ')}`] : []),
  ].join(' and ')
  return `the ${table} table ${change} in one deploy, over the indexes of the last release (infra/config/released-indexes-config.ts): CloudFormation adds or deletes one global secondary index per table update. Ship ${(added[0] ?? deleted[0]) as string} alone first, wait until it is ACTIVE in production and record it in RELEASED_INDEXES, then the next (docs/adding-an-operation.md, "A new index")`
}
