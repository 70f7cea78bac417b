import { mkdir } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb'
import dynalite from 'dynalite'
import { IN_MEMORY } from '#shared/config/local-control-config.ts'

export { IN_MEMORY }

export interface EmbeddedDynamo {
  endpoint: string
  close(): Promise<void>
}

/**
 * dynalite (DynamoDB's API on LevelDB) in this process, on a random loopback port. With a data
 * directory every acknowledged write is in LevelDB's log before the response (dynalite answers
 * PutItem and UpdateItem from the put's callback; LevelDB writes each log record to the file
 * before it calls back), so it survives a killed process; not a power cut (no fsync). One gap,
 * from dynalite's code: a put writes the GSI entries first, then the item, as separate writes, so
 * a kill between them can leave an unacknowledged pet in its status list without the item.
 */
export const startEmbeddedDynamo = async (dataDir: string): Promise<EmbeddedDynamo> => {
  let path: string | undefined
  if (dataDir !== IN_MEMORY) {
    path = join(dataDir, 'dynamodb')
    await mkdir(path, { recursive: true })
  }
  const server = dynalite({
    ...(path ? { path } : {}),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        // SDK clients keep connections alive; they must not hold the shutdown open.
        server.closeIdleConnections()
      }),
  }
}

/** Creates a table if it does not exist yet (local and test tables only; CDK owns AWS tables). */
export const ensureTable = async (
  client: DynamoDBClient,
  definition: CreateTableCommandInput,
): Promise<void> => {
  try {
    await client.send(new DescribeTableCommand({ TableName: definition.TableName }))
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error
    try {
      await client.send(new CreateTableCommand(definition))
    } catch (createError) {
      // Another server or test on the same DynamoDB created it first: wait for it all the same.
      if (!(createError instanceof ResourceInUseException)) throw createError
    }
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const { Table } = await client.send(
        new DescribeTableCommand({ TableName: definition.TableName }),
      )
      if (Table?.TableStatus === 'ACTIVE') return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`Table ${definition.TableName} did not become active`)
  }
}
