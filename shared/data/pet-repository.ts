import {
  type DynamoDBDocumentClient,
  GetCommand,
  type NativeAttributeValue,
  PutCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb'
import type { NewPet } from '#shared/domain/new-pet-schema.ts'
import type { Pet, PetStatus } from '#shared/domain/pet-schema.ts'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'
import type { IdAllocator } from './id-allocator.ts'
import { PET_STATUS_INDEX, PET_TABLE, petKey } from './table-keys.ts'

export interface ListPetsOptions {
  limit: number
  status?: PetStatus | undefined
  /** Id of the last pet of the previous page. */
  afterId?: number | undefined
}

export interface PetPage {
  pets: Pet[]
  /** Id to continue after, when more pets exist. */
  lastId: number | undefined
}

export interface PetRepositoryOptions {
  client: DynamoDBDocumentClient
  tableName: string
  ids: IdAllocator
}

type Item = Record<string, NativeAttributeValue>

/** Owns the pet table's keys, conditions and item mapping. */
export class PetRepository {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #ids: IdAllocator

  constructor({ client, tableName, ids }: PetRepositoryOptions) {
    this.#client = client
    this.#tableName = tableName
    this.#ids = ids
  }

  async create(newPet: NewPet): Promise<Pet> {
    const pet: Pet = { id: await this.allocateId(), ...newPet }
    // The allocator never hands an id out twice, so an item already under this fresh id is this
    // very write: the SDK retried a put whose answer was lost after DynamoDB had applied it.
    await this.insert(pet)
    return pet
  }

  /** A fresh id, never handed out before (ids may have gaps, never repeats). */
  allocateId(): Promise<number> {
    return this.#ids.next()
  }

  /**
   * Writes a pet under an id from allocateId. A put never overwrites a pet: when an item with that
   * id exists already the answer is `exists` and nothing is written (an idempotent create that
   * takes over a crashed attempt's id relies on this; it never needs to read the pet).
   */
  async insert(pet: Pet): Promise<'written' | 'exists'> {
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: { ...petKey(pet.id), ...pet, createdAt: new Date().toISOString() },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PET_TABLE.partitionKey },
        }),
      )
      return 'written'
    } catch (error) {
      if (isConditionFailure(error)) return 'exists'
      throw error
    }
  }

  async get(id: number): Promise<Pet | undefined> {
    const result = await this.#client.send(
      new GetCommand({ TableName: this.#tableName, Key: petKey(id), ConsistentRead: true }),
    )
    return result.Item ? toPet(result.Item) : undefined
  }

  /**
   * One page. Reads one item past the page to know whether another page exists, so the last
   * page never carries a cursor to an empty page. Filtered pages come from the status GSI in id
   * order; unfiltered pages from a scan (order unspecified, every pet exactly once).
   */
  async list({ limit, status, afterId }: ListPetsOptions): Promise<PetPage> {
    const wanted = limit + 1
    const items: Item[] = []
    let startKey: Item | undefined =
      afterId === undefined ? undefined : this.#startKey(afterId, status)
    do {
      const page = await this.#client.send(
        status === undefined
          ? new ScanCommand({
              TableName: this.#tableName,
              // The counter item shares the table; only pet items are listed.
              FilterExpression: 'begins_with(#pk, :petPrefix)',
              ExpressionAttributeNames: { '#pk': PET_TABLE.partitionKey },
              ExpressionAttributeValues: { ':petPrefix': PET_TABLE.petKeyPrefix },
              ExclusiveStartKey: startKey,
              Limit: wanted - items.length,
            })
          : new QueryCommand({
              TableName: this.#tableName,
              IndexName: PET_STATUS_INDEX.indexName,
              KeyConditionExpression: '#status = :status',
              ExpressionAttributeNames: { '#status': PET_STATUS_INDEX.partitionKey.name },
              ExpressionAttributeValues: { ':status': status },
              ExclusiveStartKey: startKey,
              Limit: wanted - items.length,
            }),
      )
      items.push(...(page.Items ?? []))
      startKey = page.LastEvaluatedKey
    } while (startKey !== undefined && items.length < wanted)

    const pets = items.slice(0, limit).map(toPet)
    const more = items.length > limit
    return { pets, lastId: more ? pets.at(-1)?.id : undefined }
  }

  #startKey(afterId: number, status: PetStatus | undefined): Item {
    return status === undefined
      ? petKey(afterId)
      : {
          ...petKey(afterId),
          [PET_STATUS_INDEX.partitionKey.name]: status,
          [PET_STATUS_INDEX.sortKey.name]: afterId,
        }
  }
}

/** Numbers arrive wrapped (see dynamo-client), so categoryId keeps every int64 digit. */
const toPet = (item: Item): Pet => {
  const pet: Pet = {
    id: Number(String(item.id)),
    name: String(item.name),
    categoryId: BigInt(String(item.categoryId)),
  }
  if (typeof item.status === 'string') pet.status = item.status as PetStatus
  return pet
}
