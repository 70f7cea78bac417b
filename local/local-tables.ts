import { existsSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  BatchWriteItemCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  ScanCommand,
} from '@aws-sdk/client-dynamodb'
import { addressBlockTableDefinition } from '#functions/address-block/address-block-repository.ts'
import {
  idempotencyTableDefinition,
  keyMirrorTableDefinition,
  petTableDefinition,
  rateLimitTableDefinition,
  storeKeyTableDefinition,
} from '#shared/data/table-keys.ts'
import { LocalConfigError } from './control-plane/local-config-error.ts'
import { ensureTable } from './embedded-dynamo.ts'
import type { LocalTableNames } from './local-environment.ts'

// The local server's tables: made from the one definition of each table and its indexes.

export type LocalTableDefinitions = Record<keyof LocalTableNames, CreateTableCommandInput>

/** Each local table's CreateTable input (shared/data/table-keys.ts), as the CDK makes them. */
export const localTableDefinitions = (tables: LocalTableNames): LocalTableDefinitions => ({
  pets: petTableDefinition(tables.pets),
  rateLimits: rateLimitTableDefinition(tables.rateLimits),
  idempotency: idempotencyTableDefinition(tables.idempotency),
  keyMirror: keyMirrorTableDefinition(tables.keyMirror),
  storeKeys: storeKeyTableDefinition(tables.storeKeys),
  addressBlocks: addressBlockTableDefinition(tables.addressBlocks),
})

export interface PrepareTablesOptions {
  client: DynamoDBClient
  definitions: LocalTableDefinitions
  /** The embedded DynamoDB's data directory; unset: another endpoint (DYNAMODB_ENDPOINT). */
  embeddedDataDir: string | undefined
  /** Where the tables are, for the messages. */
  endpoint: string
}

/** The indexes a table's definition has and the table on the endpoint lacks. */
const missingIndexes = async (client: DynamoDBClient, definition: CreateTableCommandInput) => {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: definition.TableName }))
  const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName))
  return (definition.GlobalSecondaryIndexes ?? []).filter((index) => !present.has(index.IndexName))
}

/** The AWS CLI command that gives a table one index, for an endpoint the server does not own. */
const updateTableCommand = (
  endpoint: string,
  definition: CreateTableCommandInput,
  index: NonNullable<CreateTableCommandInput['GlobalSecondaryIndexes']>[number],
): string => {
  const keys = new Set(index.KeySchema?.map((key) => key.AttributeName))
  const attributes = (definition.AttributeDefinitions ?? [])
    .filter((attribute) => keys.has(attribute.AttributeName))
    .map(
      (attribute) =>
        `AttributeName=${attribute.AttributeName},AttributeType=${attribute.AttributeType}`,
    )
    .join(' ')
  return `aws dynamodb update-table --endpoint-url ${endpoint} --table-name ${definition.TableName} --attribute-definitions ${attributes} --global-secondary-index-updates '${JSON.stringify([{ Create: index }])}'`
}

/**
 * Creates the tables that are missing and brings the indexes of those that exist to their
 * definitions. The embedded DynamoDB's tables are this server's own: a table without an index
 * its definition has gains it here (dynalite accepts UpdateTable's index Create but never builds
 * the index, so the table is rebuilt with it: rebuildWithIndexes). A table on any other endpoint
 * is never altered: the start stops, with the command that adds the index (one per update, as
 * DynamoDB allows).
 */
export const prepareLocalTables = async ({
  client,
  definitions,
  embeddedDataDir,
  endpoint,
}: PrepareTablesOptions): Promise<void> => {
  for (const definition of Object.values(definitions)) {
    if (embeddedDataDir !== undefined) await finishRebuild(client, definition, embeddedDataDir)
    await ensureTable(client, definition)
    const missing = await missingIndexes(client, definition)
    if (missing.length === 0) continue
    if (embeddedDataDir !== undefined) {
      await rebuildWithIndexes(client, definition, embeddedDataDir)
      continue
    }
    const first = missing[0] as (typeof missing)[number]
    throw new LocalConfigError(
      `table ${definition.TableName} on ${endpoint} has no index ${missing.map((index) => index.IndexName).join(', ')}, which its definition (shared/config/table-indexes-config.ts) has and the functions query. The server never alters a table on DYNAMODB_ENDPOINT: add ${missing.length > 1 ? 'each index, one at a time (DynamoDB creates one per update), waiting for it to be ACTIVE, starting with' : 'it with'}\n  ${updateTableCommand(endpoint, definition, first)}\nthen start again`,
    )
  }
}

/** The copy a rebuild keeps while it replaces a table, and the mark that the copy is whole. */
const rebuildCopyOf = (tableName: string) => `${tableName}--rebuild`
const copiedMarkOf = (dataDir: string, tableName: string) =>
  join(dataDir, `dynamodb-rebuild-${tableName}.copied`)

const copyItems = async (client: DynamoDBClient, from: string, to: string): Promise<number> => {
  let copied = 0
  let startKey: Record<string, unknown> | undefined
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: from,
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey as never } : {}),
      }),
    )
    const items = page.Items ?? []
    for (let start = 0; start < items.length; start += 25) {
      let requests = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }))
      while (requests.length > 0) {
        const { UnprocessedItems } = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [to]: requests } }),
        )
        requests = (UnprocessedItems?.[to] ?? []) as typeof requests
      }
    }
    copied += items.length
    startKey = page.LastEvaluatedKey
  } while (startKey)
  return copied
}

const deleteTable = async (client: DynamoDBClient, tableName: string): Promise<void> => {
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }))
    for (;;) {
      await client.send(new DescribeTableCommand({ TableName: tableName }))
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error
  }
}

/**
 * Gives an embedded table the indexes it lacks: its items are copied into a new table of the
 * whole definition, the mark that the copy is whole is written, the table is made again from the
 * definition and the items copied back (dynalite fills the indexes as each item is put). A start
 * killed midway finishes the work on the next start (finishRebuild): before the mark the table is
 * untouched; after it, the copy is whole.
 */
const rebuildWithIndexes = async (
  client: DynamoDBClient,
  definition: CreateTableCommandInput,
  dataDir: string,
): Promise<void> => {
  const tableName = definition.TableName as string
  const copy = rebuildCopyOf(tableName)
  await deleteTable(client, copy)
  await ensureTable(client, { ...definition, TableName: copy })
  await copyItems(client, tableName, copy)
  await writeFile(copiedMarkOf(dataDir, tableName), `${copy}\n`)
  await finishRebuild(client, definition, dataDir)
}

/** The second half of a rebuild, when a whole copy is marked: the table again, from the copy. */
const finishRebuild = async (
  client: DynamoDBClient,
  definition: CreateTableCommandInput,
  dataDir: string,
): Promise<void> => {
  const tableName = definition.TableName as string
  const mark = copiedMarkOf(dataDir, tableName)
  if (!existsSync(mark)) return
  await deleteTable(client, tableName)
  await ensureTable(client, definition)
  await copyItems(client, rebuildCopyOf(tableName), tableName)
  await rm(mark)
  await deleteTable(client, rebuildCopyOf(tableName))
}
