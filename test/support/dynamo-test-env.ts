import { randomUUID } from 'node:crypto'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { ensureTable, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import {
  idempotencyTableDefinition,
  petTableDefinition,
  rateLimitTableDefinition,
} from '#shared/data/table-keys.ts'

/**
 * A DynamoDB for integration tests: in-memory dynalite, or the endpoint in DYNAMODB_ENDPOINT
 * (DynamoDB Local, or real AWS with credentials) so the same suite runs against either.
 * Every call gets fresh, uniquely named tables.
 */
/**
 * Reads a refused conditional write costs beyond the write itself: AWS and DynamoDB Local return
 * the old item with the failure (ReturnValuesOnConditionCheckFailure), dynalite does not, so the
 * code reads it. Call counts in tests add this.
 */
export const OLD_ITEM_READS = process.env.DYNAMODB_ENDPOINT ? 0 : 1

export interface DynamoTestEnv {
  endpoint: string
  petTable: string
  rateLimitTable: string
  idempotencyTable: string
  client: DynamoDBClient
  documentClient: ReturnType<typeof createDocumentClient>
  close(): Promise<void>
}

export const startDynamoTestEnv = async (): Promise<DynamoTestEnv> => {
  const external = process.env.DYNAMODB_ENDPOINT
  const embedded = external ? undefined : await startEmbeddedDynamo(IN_MEMORY)
  const endpoint = external ?? (embedded?.endpoint as string)
  const config = {
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    ...(external ? {} : { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
  }
  const client = new DynamoDBClient(config)
  const suffix = randomUUID().slice(0, 8)
  const petTable = `test-pets-${suffix}`
  const rateLimitTable = `test-rate-limits-${suffix}`
  const idempotencyTable = `test-idempotency-${suffix}`
  await ensureTable(client, petTableDefinition(petTable))
  await ensureTable(client, rateLimitTableDefinition(rateLimitTable))
  await ensureTable(client, idempotencyTableDefinition(idempotencyTable))
  const documentClient = createDocumentClient(config)
  return {
    endpoint,
    petTable,
    rateLimitTable,
    idempotencyTable,
    client,
    documentClient,
    close: async () => {
      client.destroy()
      documentClient.destroy()
      await embedded?.close()
    },
  }
}
