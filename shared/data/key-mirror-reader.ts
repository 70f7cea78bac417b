import {
  type DynamoDBDocumentClient,
  GetCommand,
  type NativeAttributeValue,
  NumberValue,
} from '@aws-sdk/lib-dynamodb'
import type { AppLogger } from '#shared/observability/logger.ts'
import { type KeyMirrorItem, KeyMirrorItemSchema } from './key-mirror-item.ts'
import { KEY_MIRROR_TABLE } from './table-keys.ts'

// The key mirror's reader: one GetItem by key hash, what the authorizer and the keys CLI's wait do.

type Item = Record<string, NativeAttributeValue>

export interface KeyMirrorReaderOptions {
  client: DynamoDBDocumentClient
  tableName: string
  logger?: AppLogger
}

/** The shared document client wraps numbers (see dynamo-client); the schemas want plain ones. */
export const unwrapNumbers = (item: Item): Item =>
  Object.fromEntries(
    Object.entries(item).map(([name, value]) => [
      name,
      value instanceof NumberValue ? Number(value.toString()) : value,
    ]),
  )

/**
 * Reads the key mirror table, never writes it (the key sync's writer is keys/key-mirror-writer.ts,
 * which no function of the request path bundles).
 */
export class KeyMirrorReader {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #logger: AppLogger | undefined

  constructor({ client, tableName, logger }: KeyMirrorReaderOptions) {
    this.#client = client
    this.#tableName = tableName
    this.#logger = logger
  }

  /**
   * One GetItem, eventually consistent (half a read unit) unless `consistent` asks for a strongly
   * consistent one, which sees every write DynamoDB has acknowledged. The authorizer and the keys
   * CLI's wait ask: a revoked key is refused, and "in force now" is true, once the write is. An
   * item that does not match the schema is logged (key id and hash prefix only) and treated as
   * absent.
   */
  async get(
    keyHash: string,
    { consistent = false }: { consistent?: boolean } = {},
  ): Promise<KeyMirrorItem | undefined> {
    const { Item: item } = await this.#client.send(
      new GetCommand({
        TableName: this.#tableName,
        Key: { [KEY_MIRROR_TABLE.partitionKey]: keyHash },
        ...(consistent ? { ConsistentRead: true } : {}),
      }),
    )
    if (!item) return undefined
    const parsed = KeyMirrorItemSchema.safeParse(unwrapNumbers(item))
    if (parsed.success) return parsed.data
    this.#logger?.warn('Ignoring malformed key mirror item', {
      keyId: typeof item.keyId === 'string' ? item.keyId : undefined,
      keyHashPrefix: keyHash.slice(0, 12),
      issues: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    })
    return undefined
  }
}
