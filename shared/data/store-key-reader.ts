import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb'
import type { AppLogger } from '#shared/observability/logger.ts'
import { unwrapNumbers } from './key-mirror-reader.ts'
import { type StoreKeyItem, StoreKeyItemSchema } from './store-key-item.ts'
import { STORE_KEY_TABLE } from './table-keys.ts'

// The store key table's reader: one GetItem by key id, what the authorizer does per store key.

export interface StoreKeyReaderOptions {
  client: DynamoDBDocumentClient
  tableName: string
  logger?: AppLogger
}

/**
 * Reads the store key table, never writes it (the keys CLI's writer is keys/store-key-repository.ts,
 * which no function of the request path bundles).
 */
export class StoreKeyReader {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #logger: AppLogger | undefined

  constructor({ client, tableName, logger }: StoreKeyReaderOptions) {
    this.#client = client
    this.#tableName = tableName
    this.#logger = logger
  }

  /**
   * One GetItem by id; strongly consistent when asked (the authorizer asks, as for the key
   * mirror: a key revoked a moment ago must not be read back and cached again). An item that
   * does not match the schema is logged by id and treated as absent.
   */
  async get(
    keyId: string,
    { consistent = false }: { consistent?: boolean } = {},
  ): Promise<StoreKeyItem | undefined> {
    const { Item: item } = await this.#client.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { [STORE_KEY_TABLE.partitionKey]: keyId },
        ...(consistent ? { ConsistentRead: true } : {}),
      }),
    )
    if (!item) return undefined
    const parsed = StoreKeyItemSchema.safeParse(unwrapNumbers(item))
    if (parsed.success) return parsed.data
    this.#logger?.warn('Ignoring malformed store key item', {
      keyId,
      issues: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    })
    return undefined
  }
}
