import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb'
import { PET_TABLE } from './table-keys.ts'

/**
 * Hands out pet ids from blocks reserved on an atomic counter item: one DynamoDB round trip per
 * block, not per create. A block belongs to one allocator, so ids are unique across any number
 * of Lambda instances; ids of a block that dies with its instance are skipped, never reused.
 */
export interface IdAllocator {
  next(): Promise<number>
}

export interface BlockIdAllocatorOptions {
  client: DynamoDBDocumentClient
  tableName: string
  blockSize?: number
}

export class BlockIdAllocator implements IdAllocator {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #blockSize: number
  #next = 0
  #end = 0 // exclusive
  #refill: Promise<void> | undefined

  constructor({ client, tableName, blockSize = 50 }: BlockIdAllocatorOptions) {
    if (!Number.isInteger(blockSize) || blockSize < 1)
      throw new Error('blockSize must be a positive integer')
    this.#client = client
    this.#tableName = tableName
    this.#blockSize = blockSize
  }

  async next(): Promise<number> {
    while (this.#next >= this.#end) {
      // Concurrent callers in one instance share a single reservation.
      this.#refill ??= this.#reserveBlock().finally(() => {
        this.#refill = undefined
      })
      await this.#refill
    }
    const id = this.#next
    this.#next += 1
    return id
  }

  async #reserveBlock(): Promise<void> {
    const result = await this.#client.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: { [PET_TABLE.partitionKey]: PET_TABLE.idCounterKey },
        UpdateExpression: 'SET #last = if_not_exists(#last, :zero) + :size',
        ExpressionAttributeNames: { '#last': 'lastReservedId' },
        ExpressionAttributeValues: { ':zero': 0, ':size': this.#blockSize },
        ReturnValues: 'UPDATED_NEW',
      }),
    )
    const last = Number(String(result.Attributes?.lastReservedId))
    if (!Number.isSafeInteger(last) || last > Number.MAX_SAFE_INTEGER) {
      throw new Error('Pet id counter returned an invalid value')
    }
    this.#next = last - this.#blockSize + 1
    this.#end = last + 1
  }
}
