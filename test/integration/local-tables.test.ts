import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type CreateTableCommandInput,
  DescribeTableCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalConfigError } from '#local/control-plane/local-config-error.ts'
import { ensureTable } from '#local/embedded-dynamo.ts'
import { localTableDefinitions, prepareLocalTables } from '#local/local-tables.ts'
import {
  indexesOf as indexesOfDefinition,
  type TABLE_INDEXES,
} from '#shared/config/table-indexes-config.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'

/**
 * The local server's tables on data it already has: a table made before an index was defined
 * gains it at start on the embedded DynamoDB (dynalite builds no index on UpdateTable, so the
 * table is rebuilt with it, its items kept), and a start killed midway finishes the work; on any
 * other endpoint the start stops with the command that adds the index, and the table is left as
 * it was.
 */
let env: DynamoTestEnv
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

let tableCount = 0
/** The pet table as a server of an earlier version made it: without its indexes. */
const oldPetTable = async (): Promise<{ name: string; definition: CreateTableCommandInput }> => {
  tableCount += 1
  const name = `${env.petTable}-old-${tableCount}`
  const definition = localTableDefinitions({
    pets: name,
    rateLimits: `${name}-rl`,
    idempotency: `${name}-id`,
    keyMirror: `${name}-km`,
    storeKeys: `${name}-sk`,
    addressBlocks: `${name}-ab`,
  }).pets
  const { GlobalSecondaryIndexes: _indexes, ...withoutIndexes } = definition
  await ensureTable(env.client, {
    ...withoutIndexes,
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
  })
  for (const id of [1, 2, 3]) {
    await env.client.send(
      new PutItemCommand({
        TableName: name,
        Item: {
          pk: { S: `PET#${id}` },
          id: { N: String(id) },
          status: { S: id === 2 ? 'pending' : 'sold' },
        },
      }),
    )
  }
  return { name, definition }
}

const indexesOf = async (name: string) =>
  (
    await env.client.send(new DescribeTableCommand({ TableName: name }))
  ).Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName) ?? []

const soldIds = async (name: string) =>
  (
    await env.client.send(
      new QueryCommand({
        TableName: name,
        IndexName: 'status-id-index',
        KeyConditionExpression: '#s = :s',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': { S: 'sold' } },
      }),
    )
  ).Items?.map((item) => item.id?.N)

describe('the local and test tables', () => {
  it('have every index TABLE_INDEXES defines for them, as the CDK tables do', async () => {
    const names = {
      pets: `${env.petTable}-local`,
      rateLimits: `${env.petTable}-local-rl`,
      idempotency: `${env.petTable}-local-id`,
      keyMirror: `${env.petTable}-local-km`,
      storeKeys: `${env.petTable}-local-sk`,
      addressBlocks: `${env.petTable}-local-ab`,
    }
    await prepareLocalTables({
      client: env.client,
      definitions: localTableDefinitions(names),
      embeddedDataDir: undefined,
      endpoint: env.endpoint,
    })
    const made = { ...names, testPets: env.petTable }
    const problems: string[] = []
    for (const [key, name] of Object.entries(made)) {
      const table = key === 'testPets' ? 'pets' : (key as keyof typeof TABLE_INDEXES)
      const defined = indexesOfDefinition(table)
        .map(([, index]) => index.indexName)
        .sort()
      const actual = (await indexesOf(name)).sort()
      if (JSON.stringify(actual) !== JSON.stringify(defined)) {
        problems.push(
          `${key === 'testPets' ? 'the test tables (test/support/dynamo-test-env.ts)' : "the local server's tables (local/local-tables.ts)"}: ${table} has indexes ${actual.join(', ') || 'none'}, but TABLE_INDEXES.${table} defines ${defined.join(', ') || 'none'}: make the table from its definition in shared/data/table-keys.ts (${table === 'pets' ? 'petTableDefinition' : `${table}TableDefinition`}), which adds every index TABLE_INDEXES gives it`,
        )
      }
    }
    expect(problems).toEqual([])
  })
})

describe('local tables made before an index was defined', () => {
  it('gain the index at start on the embedded DynamoDB, every item kept and in it', async () => {
    const { name, definition } = await oldPetTable()
    const dataDir = mkdtempSync(join(tmpdir(), 'petstore-tables-'))
    await prepareLocalTables({
      client: env.client,
      definitions: { pets: definition } as never,
      embeddedDataDir: dataDir,
      endpoint: env.endpoint,
    })
    expect((await indexesOf(name)).sort()).toEqual(
      (definition.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName).sort(),
    )
    expect(await soldIds(name)).toEqual(['1', '3'])
    const { Count } = await env.client.send(new ScanCommand({ TableName: name }))
    expect(Count).toBe(3)
    // The copy it was rebuilt from is gone (dynalite and DynamoDB Local word it differently).
    await expect(
      env.client.send(new DescribeTableCommand({ TableName: `${name}--rebuild` })),
    ).rejects.toMatchObject({ name: 'ResourceNotFoundException' })
  })

  it('finish a rebuild a killed start left with its copy whole', async () => {
    const { name, definition } = await oldPetTable()
    const dataDir = mkdtempSync(join(tmpdir(), 'petstore-tables-'))
    // As a start killed after its copy was whole and the table dropped: the copy, and its mark.
    await ensureTable(env.client, { ...definition, TableName: `${name}--rebuild` })
    await env.client.send(
      new PutItemCommand({
        TableName: `${name}--rebuild`,
        Item: { pk: { S: 'PET#7' }, id: { N: '7' }, status: { S: 'sold' } },
      }),
    )
    writeFileSync(join(dataDir, `dynamodb-rebuild-${name}.copied`), `${name}--rebuild\n`)
    await prepareLocalTables({
      client: env.client,
      definitions: { pets: definition } as never,
      embeddedDataDir: dataDir,
      endpoint: env.endpoint,
    })
    expect(await soldIds(name)).toEqual(['7'])
  })

  it('stop the start on another endpoint, with the command that adds the index, and stay as they were', async () => {
    const { name, definition } = await oldPetTable()
    const start = prepareLocalTables({
      client: env.client,
      definitions: { pets: definition } as never,
      embeddedDataDir: undefined,
      endpoint: 'http://localhost:8000',
    })
    await expect(start).rejects.toThrow(LocalConfigError)
    // The command adds the first index of the definition; one at a time when more are missing.
    await expect(start).rejects.toThrow(
      new RegExp(
        `table ${name} on http://localhost:8000 has no index status-id-index.* The server never alters a table on DYNAMODB_ENDPOINT: add (it|each index, one at a time .* starting) with\\n  aws dynamodb update-table --endpoint-url http://localhost:8000 --table-name ${name} --attribute-definitions AttributeName=status,AttributeType=S AttributeName=id,AttributeType=N --global-secondary-index-updates '\\[\\{"Create":\\{"IndexName":"status-id-index"`,
        's',
      ),
    )
    expect(await indexesOf(name)).toEqual([])
  })
})
