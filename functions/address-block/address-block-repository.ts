import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb'
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  NumberValue,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'

/**
 * The automatic block's state, in a table of its own: unauthorized answers per address and UTC
 * minute (`pk = count#<address>`, `sk = <minute start, ms>`), and the blocks themselves, all in one
 * partition (`pk = block`, `sk = <address>`) so one Query reads every block. Both expire by TTL
 * (`expiresAt`, Unix seconds); the IP sets are made from the blocks, never the other way round.
 */
export const ADDRESS_BLOCK_TABLE = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'expiresAt',
  blockPartition: 'block',
  countPrefix: 'count#',
} as const

/** CreateTable input for local and test tables (the CDK stack declares the same keys). */
export const addressBlockTableDefinition = (tableName: string): CreateTableCommandInput => ({
  TableName: tableName,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [
    { AttributeName: ADDRESS_BLOCK_TABLE.partitionKey, AttributeType: 'S' },
    { AttributeName: ADDRESS_BLOCK_TABLE.sortKey, AttributeType: 'S' },
  ],
  KeySchema: [
    { AttributeName: ADDRESS_BLOCK_TABLE.partitionKey, KeyType: 'HASH' },
    { AttributeName: ADDRESS_BLOCK_TABLE.sortKey, KeyType: 'RANGE' },
  ],
})

/** One address's block. */
export interface AddressBlock {
  address: string
  version: 'IPV4' | 'IPV6'
  /** When it began and when it ends (ms since the epoch). */
  since: number
  until: number
  /** The unauthorized answers of the minute that tripped it. */
  count: number
}

/** A count item outlives its minute by this much, then TTL removes it. */
const COUNT_KEPT_MS = 10 * 60_000
/** A block item outlives its block by this much (the sweep removes it sooner). */
const BLOCK_KEPT_MS = 24 * 60 * 60_000

const numberOf = (value: unknown): number =>
  value instanceof NumberValue ? Number(value.toString()) : Number(value)

const seconds = (ms: number) => Math.ceil(ms / 1000)

export class AddressBlockRepository {
  readonly #client: DynamoDBDocumentClient
  readonly #countingClient: DynamoDBDocumentClient
  readonly #tableName: string

  /** `countingClient` sends each counting write once (maxAttempts 1); `client` everything else. */
  constructor({
    client,
    countingClient = client,
    tableName,
  }: {
    client: DynamoDBDocumentClient
    countingClient?: DynamoDBDocumentClient
    tableName: string
  }) {
    this.#client = client
    this.#countingClient = countingClient
    this.#tableName = tableName
  }

  /**
   * Adds a delivery's unauthorized answers to an address's minute and returns the minute's total.
   * A counting write is not idempotent: the caller sends it once (no retry after an ambiguous
   * failure), so a count is never more than the answers logged.
   */
  async addUnauthorized(address: string, minute: number, count: number): Promise<number> {
    const { Attributes } = await this.#countingClient.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: {
          [ADDRESS_BLOCK_TABLE.partitionKey]: `${ADDRESS_BLOCK_TABLE.countPrefix}${address}`,
          [ADDRESS_BLOCK_TABLE.sortKey]: String(minute),
        },
        UpdateExpression: 'ADD #n :count SET #ttl = :ttl',
        ExpressionAttributeNames: { '#n': 'n', '#ttl': ADDRESS_BLOCK_TABLE.ttlAttribute },
        ExpressionAttributeValues: { ':count': count, ':ttl': seconds(minute + COUNT_KEPT_MS) },
        ReturnValues: 'UPDATED_NEW',
      }),
    )
    return numberOf(Attributes?.n)
  }

  /**
   * Blocks an address until `block.until`, or leaves a block that already lasts longer. True when
   * the address was not blocked at `now` (a new block the IP sets must take in).
   */
  async block(block: AddressBlock, now: number): Promise<boolean> {
    try {
      const { Attributes } = await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: this.#blockKey(block.address),
          UpdateExpression:
            'SET #version = :version, #since = :since, #until = :until, #count = :count, #ttl = :ttl',
          // An earlier, longer block stays as it is (a late delivery of the same flood).
          ConditionExpression: 'attribute_not_exists(#until) OR #until < :until',
          ExpressionAttributeNames: {
            '#version': 'version',
            '#since': 'since',
            '#until': 'until',
            '#count': 'count',
            '#ttl': ADDRESS_BLOCK_TABLE.ttlAttribute,
          },
          ExpressionAttributeValues: {
            ':version': block.version,
            ':since': block.since,
            ':until': block.until,
            ':count': block.count,
            ':ttl': seconds(block.until + BLOCK_KEPT_MS),
          },
          ReturnValues: 'ALL_OLD',
        }),
      )
      return Attributes === undefined || numberOf(Attributes.until) <= now
    } catch (error) {
      if (isConditionFailure(error)) return false
      throw error
    }
  }

  /** Every block, ended or not (one partition, read in pages). */
  async blocks(): Promise<AddressBlock[]> {
    const blocks: AddressBlock[] = []
    let start: Record<string, unknown> | undefined
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#tableName,
          KeyConditionExpression: '#pk = :block',
          ExpressionAttributeNames: { '#pk': ADDRESS_BLOCK_TABLE.partitionKey },
          ExpressionAttributeValues: { ':block': ADDRESS_BLOCK_TABLE.blockPartition },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      )
      for (const item of page.Items ?? []) {
        blocks.push({
          address: String(item[ADDRESS_BLOCK_TABLE.sortKey]),
          version: item.version === 'IPV6' ? 'IPV6' : 'IPV4',
          since: numberOf(item.since),
          until: numberOf(item.until),
          count: numberOf(item.count),
        })
      }
      start = page.LastEvaluatedKey
    } while (start)
    return blocks
  }

  /** Removes a block that has ended by `now` (one renewed since stays). */
  async removeEnded(address: string, now: number): Promise<void> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#tableName,
          Key: this.#blockKey(address),
          ConditionExpression: '#until <= :now',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':now': now },
        }),
      )
    } catch (error) {
      if (!isConditionFailure(error)) throw error
    }
  }

  /** Ends a block now (an operator's lift). True when there was one. */
  async lift(address: string): Promise<boolean> {
    const { Attributes } = await this.#client.send(
      new DeleteCommand({
        TableName: this.#tableName,
        Key: this.#blockKey(address),
        ReturnValues: 'ALL_OLD',
      }),
    )
    return Attributes !== undefined
  }

  #blockKey(address: string) {
    return {
      [ADDRESS_BLOCK_TABLE.partitionKey]: ADDRESS_BLOCK_TABLE.blockPartition,
      [ADDRESS_BLOCK_TABLE.sortKey]: address,
    }
  }
}
