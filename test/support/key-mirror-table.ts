import { randomUUID } from 'node:crypto'
import { ensureTable } from '#local/embedded-dynamo.ts'
import { keyMirrorTableDefinition, storeKeyTableDefinition } from '#shared/data/table-keys.ts'
import type { DynamoTestEnv } from './dynamo-test-env.ts'

/** A fresh, uniquely named key mirror table in a test DynamoDB. */
export const createKeyMirrorTable = async (env: DynamoTestEnv): Promise<string> => {
  const tableName = `test-key-mirror-${randomUUID().slice(0, 8)}`
  await ensureTable(env.client, keyMirrorTableDefinition(tableName))
  return tableName
}

/** A fresh, uniquely named store key table in a test DynamoDB. */
export const createStoreKeyTable = async (env: DynamoTestEnv): Promise<string> => {
  const tableName = `test-store-keys-${randomUUID().slice(0, 8)}`
  await ensureTable(env.client, storeKeyTableDefinition(tableName))
  return tableName
}
