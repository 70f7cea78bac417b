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
 * One dynalite per worker thread, shared by the test files it runs (the integration project
 * shares one module graph per worker): tables are unique per file, so files never meet. It ends
 * with the worker.
 */
let workerDynamo: Promise<string> | undefined
const embeddedEndpoint = (): Promise<string> => {
  workerDynamo ??= startEmbeddedDynamo(IN_MEMORY).then(({ endpoint }) => endpoint)
  return workerDynamo
}

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

/**
 * A DynamoDB for integration tests: the worker's in-memory dynalite, or the endpoint in
 * DYNAMODB_ENDPOINT (DynamoDB Local, or real AWS with credentials) so the same suite runs against
 * either. Every call gets fresh, uniquely named tables; close() releases its clients.
 */
export const startDynamoTestEnv = async (): Promise<DynamoTestEnv> => {
  const external = process.env.DYNAMODB_ENDPOINT
  const endpoint = external ?? (await embeddedEndpoint())
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
    },
  }
}
