import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb'
import { unwrapNumbers } from '#shared/data/key-mirror-reader.ts'
import { type StoreKeyItem, StoreKeyItemSchema } from '#shared/data/store-key-item.ts'
import { StoreKeyReader } from '#shared/data/store-key-reader.ts'
import { STORE_KEY_TABLE } from '#shared/data/table-keys.ts'
import { isConditionFailure } from '#shared/errors/datastore-errors.ts'

/**
 * The store key table as the keys CLI and the local control plane change it (the authorizer only
 * reads it: shared/data/store-key-reader.ts). Every change is a conditional single-item write, so
 * a key that does not exist is never brought back by one; `putMany` makes keys in batches of 25
 * (BatchWriteItem's limit) for bulk issuing. Listings are paged Scans: at a million keys a page is
 * read at a time, never the table at once.
 */
export interface StoreKeyPage {
  items: StoreKeyItem[]
  /** Where the next page starts (a key id), undefined after the last page. */
  next: string | undefined
  /** Read units the page's Scan calls consumed (DynamoDB's ConsumedCapacity). */
  readUnits: number
}

/** The changes a command makes to one key (undefined: leave it). */
export interface StoreKeyChange {
  enabled?: boolean
  plan?: { plan: StoreKeyItem['plan']; perMinute: number; perDay: number; customer?: string }
  /** A rotation's end (ISO 8601); null removes it. */
  disableAfter?: string | null
}

const BATCH = 25
/** Items a filtered listing's Scan call evaluates at most. */
const FILTERED_SCAN_PAGE = 1_000
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export class StoreKeyNotFound extends Error {
  override name = 'StoreKeyNotFound'
}

export class StoreKeyRepository extends StoreKeyReader {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string

  constructor(options: ConstructorParameters<typeof StoreKeyReader>[0]) {
    super(options)
    this.#client = options.client
    this.#tableName = options.tableName
  }

  get tableName(): string {
    return this.#tableName
  }

  /**
   * A new key; refused (ConditionalCheckFailed) if its id exists already, unless the item there is
   * this very one, field for field: a first attempt DynamoDB applied but answered late, which the
   * SDK's retry meets.
   */
  async put(item: StoreKeyItem): Promise<void> {
    const written = StoreKeyItemSchema.parse(item)
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#tableName,
          Item: written,
          ConditionExpression: 'attribute_not_exists(#id)',
          ExpressionAttributeNames: { '#id': STORE_KEY_TABLE.partitionKey },
        }),
      )
    } catch (error) {
      if (!isConditionFailure(error)) throw error
      const stored = await this.get(item.keyId, { consistent: true })
      if (JSON.stringify(stored) !== JSON.stringify(written)) throw error
    }
  }

  /**
   * Many new keys, 25 a call; unprocessed items (throttling) are sent again with a backoff.
   * Returns the write units consumed. Ids are random (50 bits), so a batch never overwrites.
   */
  async putMany(items: readonly StoreKeyItem[]): Promise<{ writeUnits: number; calls: number }> {
    let writeUnits = 0
    let calls = 0
    for (let start = 0; start < items.length; start += BATCH) {
      let pending = items
        .slice(start, start + BATCH)
        .map((item) => ({ PutRequest: { Item: StoreKeyItemSchema.parse(item) } }))
      for (let attempt = 0; pending.length > 0; attempt += 1) {
        if (attempt > 8) throw new Error('DynamoDB left store keys unprocessed after 8 retries')
        if (attempt > 0) await sleep(25 * 2 ** attempt)
        calls += 1
        const answer = await this.#client.send(
          new BatchWriteCommand({
            RequestItems: { [this.#tableName]: pending },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        )
        writeUnits += (answer.ConsumedCapacity ?? []).reduce(
          (sum, c) => sum + (c.CapacityUnits ?? 0),
          0,
        )
        pending = (answer.UnprocessedItems?.[this.#tableName] ?? []) as typeof pending
      }
    }
    return { writeUnits, calls }
  }

  /** Changes one key that exists (StoreKeyNotFound otherwise); returns it as it is now. */
  async change(keyId: string, change: StoreKeyChange): Promise<StoreKeyItem> {
    const set: string[] = []
    const remove: string[] = []
    const values: Record<string, unknown> = {}
    if (change.enabled !== undefined) {
      set.push('enabled = :enabled')
      values[':enabled'] = change.enabled
    }
    if (change.plan) {
      set.push('#plan = :plan', 'perMinute = :perMinute', 'perDay = :perDay')
      values[':plan'] = change.plan.plan
      values[':perMinute'] = change.plan.perMinute
      values[':perDay'] = change.plan.perDay
      if (change.plan.customer !== undefined) {
        set.push('customer = :customer')
        values[':customer'] = change.plan.customer
      } else remove.push('customer')
    }
    if (change.disableAfter !== undefined) {
      if (change.disableAfter === null) remove.push('disableAfter')
      else {
        set.push('disableAfter = :disableAfter')
        values[':disableAfter'] = change.disableAfter
      }
    }
    const expression = [
      set.length > 0 ? `SET ${set.join(', ')}` : '',
      remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(' ')
    try {
      const { Attributes } = await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: { [STORE_KEY_TABLE.partitionKey]: keyId },
          UpdateExpression: expression || 'SET enabled = enabled',
          ConditionExpression: 'attribute_exists(#id)',
          ExpressionAttributeNames: {
            '#id': STORE_KEY_TABLE.partitionKey,
            ...(change.plan ? { '#plan': 'plan' } : {}),
          },
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
          ReturnValues: 'ALL_NEW',
        }),
      )
      return StoreKeyItemSchema.parse(unwrapNumbers(Attributes ?? {}))
    } catch (error) {
      if (isConditionFailure(error)) throw new StoreKeyNotFound(`No store key ${keyId}`)
      throw error
    }
  }

  /** Deletes a key (revoke); returns whether it existed. */
  async delete(keyId: string): Promise<boolean> {
    const { Attributes } = await this.#client.send(
      new DeleteCommand({
        TableName: this.#tableName,
        Key: { [STORE_KEY_TABLE.partitionKey]: keyId },
        ReturnValues: 'ALL_OLD',
      }),
    )
    return Attributes !== undefined
  }

  /**
   * One page of keys: Scans from `after` (a key id a previous page ended on) until `limit` keys
   * that pass `plan` (when given) are found or the table ends. Eventually consistent reads (half
   * a unit per 4 KB): a listing for an operator, not a decision.
   */
  async page({
    limit,
    after,
    plan,
  }: {
    limit: number
    after?: string | undefined
    plan?: string | undefined
  }): Promise<StoreKeyPage> {
    const items: StoreKeyItem[] = []
    let startKey: Record<string, unknown> | undefined =
      after === undefined ? undefined : { [STORE_KEY_TABLE.partitionKey]: after }
    let readUnits = 0
    do {
      const answer = await this.#client.send(
        new ScanCommand({
          TableName: this.#tableName,
          // Unfiltered, a Scan evaluates exactly what the page lacks; filtered, a page of the
          // table at a time (a plan of 1% of the keys would otherwise cost a call per key found).
          Limit: plan === undefined ? limit - items.length : FILTERED_SCAN_PAGE,
          ReturnConsumedCapacity: 'TOTAL',
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          ...(plan === undefined
            ? {}
            : {
                FilterExpression: '#plan = :plan',
                ExpressionAttributeNames: { '#plan': 'plan' },
                ExpressionAttributeValues: { ':plan': plan },
              }),
        }),
      )
      readUnits += answer.ConsumedCapacity?.CapacityUnits ?? 0
      for (const raw of answer.Items ?? []) {
        const parsed = StoreKeyItemSchema.safeParse(unwrapNumbers(raw))
        if (parsed.success) items.push(parsed.data)
      }
      startKey = answer.LastEvaluatedKey
    } while (startKey !== undefined && items.length < limit)
    if (items.length > limit) {
      // A filtered Scan found more than the page holds: the next page starts after the last key
      // shown (a Scan resumes after any key, in the table's order), so none is skipped.
      items.length = limit
      return { items, next: items.at(-1)?.keyId, readUnits }
    }
    // A Scan's Limit counts items evaluated: where it stopped is the last key it looked at.
    const next = startKey === undefined ? undefined : String(startKey[STORE_KEY_TABLE.partitionKey])
    return { items, next, readUnits }
  }

  /** Every key, page by page (the month export's names and plans; never the request path). */
  async *all(pageSize = 1_000): AsyncGenerator<StoreKeyItem[]> {
    let after: string | undefined
    do {
      const page = await this.page({ limit: pageSize, after })
      yield page.items
      after = page.next
    } while (after !== undefined)
  }
}
