import {
  BatchWriteCommand,
  type BatchWriteCommandOutput,
  type DynamoDBDocumentClient,
  type NativeAttributeValue,
  ScanCommand,
} from '@aws-sdk/lib-dynamodb'
import type { KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorReader, type KeyMirrorReaderOptions } from '#shared/data/key-mirror-reader.ts'
import { KEY_MIRROR_TABLE } from '#shared/data/table-keys.ts'

// The key mirror's writer: the key sync's diff and bulk rebuild (the authorizer only reads:
// shared/data/key-mirror-reader.ts).

/** What a key item's partition key looks like: a SHA-256 in hex (hashApiKey). */
const KEY_HASH = /^[0-9a-f]{64}$/

/** BatchWriteItem's limit. */
export const BATCH_WRITE_SIZE = 25
const MAX_BATCH_ATTEMPTS = 8
const BASE_RETRY_DELAY_MS = 50

type Item = Record<string, NativeAttributeValue>
type WriteRequest = NonNullable<BatchWriteCommandOutput['UnprocessedItems']>[string][number]

export interface KeyMirrorWriterOptions extends KeyMirrorReaderOptions {
  /** Waits between UnprocessedItems retries (tests pass a no-op). */
  sleep?: (ms: number) => Promise<void>
}

/** A mirrored key that no entry names any more. */
export interface StaleItem {
  keyHash: string
  keyId: string
  /** The plan the mirror has it on. */
  usagePlanId: string
}

/**
 * Which mirrored keys a run's entries speak for: all of them after a read of every plan, else
 * those of the plans read, of plans that are no longer valid stage plans, and the keys named by
 * id whose plans were read (a deleted key has none left to read).
 */
export interface DiffScope {
  complete: boolean
  plansRead: ReadonlySet<string>
  validPlans: ReadonlySet<string>
  keyIds?: ReadonlySet<string>
  /**
   * Every key id of the key listing: a mirrored key it lacks is reported as `unlisted` (deleted,
   * or a listing a moment behind; the caller asks).
   */
  listedKeyIds?: ReadonlySet<string>
}

/** How the mirror differs from what API Gateway says now (see KeyMirrorWriter.diff). */
export interface MirrorDiff {
  entries: KeyMirrorEntry[]
  /** Keys in the mirror before the run. */
  mirrorSize: number
  /** Keys in the mirror before the run, by the usage plan they are on. */
  planSizes: ReadonlyMap<string, number>
  /** Entries that are new or whose grant changed. */
  changed: KeyMirrorEntry[]
  /** Hashes of mirrored keys in scope that no entry names any more, sorted. */
  stale: string[]
  /** The same keys, with their id and plan. */
  staleItems: StaleItem[]
  /** Mirrored keys out of scope that the key listing lacks (only with `listedKeyIds`). */
  unlisted: StaleItem[]
}

export interface ReplaceAllResult {
  /** Keys in the mirror after the run. */
  upserted: number
  /** Of those, items written because they were new or changed (the rest were left alone). */
  written: number
  deleted: number
}

/** The fields that decide what a key gets; syncedAt only records when they last changed. */
const sameGrant = (item: Item, entry: KeyMirrorEntry): boolean =>
  item.keyId === entry.keyId &&
  item.enabled === entry.enabled &&
  item.plan === entry.plan &&
  Number(item.perMinute) === entry.perMinute &&
  Number(item.perDay) === entry.perDay &&
  item.usagePlanId === entry.usagePlanId

/** The entries' key hashes; two entries for one key fail before any call. */
const distinctHashes = (entries: readonly KeyMirrorEntry[]): Set<string> => {
  const wanted = new Set<string>()
  for (const entry of entries) {
    // BatchWriteItem refuses two requests for one key in a batch; the source never sends them.
    if (wanted.has(entry.keyHash)) throw new Error(`Duplicate key mirror entry ${entry.keyId}`)
    wanted.add(entry.keyHash)
  }
  return wanted
}

/**
 * What it takes to make a mirror holding the items `readExisting` gives (by key hash) hold exactly
 * `entries`: the entries that are new or changed (unchanged items are left alone: a sync every
 * minute would otherwise rewrite every key 1,440 times a day) and the key hashes in scope no entry
 * names any more. Two entries for one key fail before the read. The writer's rules, in one
 * place: KeyMirrorWriter.diff reads the items with one scan, and tests that hold a mirror in
 * memory use the same function.
 */
export const mirrorDiff = async (
  entries: KeyMirrorEntry[],
  readExisting: () => Promise<ReadonlyMap<string, Item>>,
  scope?: DiffScope,
): Promise<MirrorDiff> => {
  const wanted = distinctHashes(entries)
  const existing = await readExisting()
  const planSizes = new Map<string, number>()
  for (const item of existing.values()) {
    const planId = String(item.usagePlanId)
    planSizes.set(planId, (planSizes.get(planId) ?? 0) + 1)
  }
  const inScope = (item: Item) =>
    scope === undefined ||
    scope.complete ||
    scope.plansRead.has(String(item.usagePlanId)) ||
    !scope.validPlans.has(String(item.usagePlanId)) ||
    scope.keyIds?.has(String(item.keyId)) === true
  const toStale = ([keyHash, item]: [string, Item]): StaleItem => ({
    keyHash,
    keyId: String(item.keyId),
    usagePlanId: String(item.usagePlanId),
  })
  const sorted = [...existing].sort(([a], [b]) => a.localeCompare(b))
  const staleItems = sorted
    .filter(([keyHash, item]) => !wanted.has(keyHash) && inScope(item))
    .map(toStale)
  const listed = scope?.listedKeyIds
  const unlisted = listed
    ? sorted
        .filter(
          ([keyHash, item]) =>
            !wanted.has(keyHash) && !inScope(item) && !listed.has(String(item.keyId)),
        )
        .map(toStale)
    : []
  return {
    entries,
    mirrorSize: existing.size,
    planSizes,
    changed: entries.filter((entry) => {
      const item = existing.get(entry.keyHash)
      return item === undefined || !sameGrant(item, entry)
    }),
    stale: staleItems.map(({ keyHash }) => keyHash),
    staleItems,
    unlisted,
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Writes the key mirror table (and reads it, as the reader does): the key-sync function calls
 * diff() and apply() with everything API Gateway says is valid now. Only the key sync, the local
 * server and tests load it; no function of the request path does.
 */
export class KeyMirrorWriter extends KeyMirrorReader {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #sleep: (ms: number) => Promise<void>

  constructor({ sleep, ...options }: KeyMirrorWriterOptions) {
    super(options)
    const { client, tableName } = options
    this.#client = client
    this.#tableName = tableName
    this.#sleep = sleep ?? defaultSleep
  }

  /**
   * What it takes to make the table hold exactly `entries`: the entries that are new or changed
   * (unchanged items are left alone: a sync every minute would otherwise rewrite every key 1,440
   * times a day) and the key hashes no entry names any more. One scan reads the table: one small
   * item per key of one stage.
   */
  diff(entries: KeyMirrorEntry[], scope?: DiffScope): Promise<MirrorDiff> {
    return mirrorDiff(entries, () => this.#scanItems(), scope)
  }

  /**
   * Writes each new or changed entry stamped `syncedAt`, then deletes the stale items (or those
   * of them `remove` names: the removal guard's choice), so a key deleted, disabled or detached from its plan stops working.
   * Puts come first: a run cut short never leaves a key missing that should be there. Not atomic:
   * a failure part-way leaves a mix, which the next run repairs.
   */
  async apply(
    { entries, changed, stale }: Pick<MirrorDiff, 'entries' | 'changed' | 'stale'>,
    syncedAt: string,
    { remove = stale }: { remove?: readonly string[] } = {},
  ): Promise<ReplaceAllResult> {
    await this.#batchWrite(
      changed.map((entry) => ({ PutRequest: { Item: { ...entry, syncedAt } } })),
    )
    const removed = remove
    await this.#batchWrite(
      removed.map((keyHash) => ({
        DeleteRequest: { Key: { [KEY_MIRROR_TABLE.partitionKey]: keyHash } },
      })),
    )
    return { upserted: entries.length, written: changed.length, deleted: removed.length }
  }

  /** diff() then apply(), removals included: the table holds exactly `entries` afterwards. */
  async replaceAll(entries: KeyMirrorEntry[], syncedAt: string): Promise<ReplaceAllResult> {
    return this.apply(await this.diff(entries), syncedAt)
  }

  /** Every item by its key hash. */
  async #scanItems(): Promise<Map<string, Item>> {
    const items = new Map<string, Item>()
    let startKey: Item | undefined
    do {
      const page = await this.#client.send(
        new ScanCommand({ TableName: this.#tableName, ExclusiveStartKey: startKey }),
      )
      for (const item of page.Items ?? []) {
        const keyHash = item[KEY_MIRROR_TABLE.partitionKey]
        // Only key items: the sync's own state item is not a key.
        if (typeof keyHash === 'string' && KEY_HASH.test(keyHash)) items.set(keyHash, item)
      }
      startKey = page.LastEvaluatedKey
    } while (startKey !== undefined)
    return items
  }

  /** Chunks of 25; UnprocessedItems (throttling) are retried with exponential backoff. */
  async #batchWrite(requests: WriteRequest[]): Promise<void> {
    for (let start = 0; start < requests.length; start += BATCH_WRITE_SIZE) {
      let pending = requests.slice(start, start + BATCH_WRITE_SIZE)
      for (let attempt = 1; pending.length > 0; attempt += 1) {
        if (attempt > MAX_BATCH_ATTEMPTS) {
          throw new Error(
            `Key mirror batch write left ${pending.length} items unprocessed after ${MAX_BATCH_ATTEMPTS} attempts`,
          )
        }
        if (attempt > 1) await this.#sleep(BASE_RETRY_DELAY_MS * 2 ** (attempt - 2))
        const { UnprocessedItems } = await this.#client.send(
          new BatchWriteCommand({ RequestItems: { [this.#tableName]: pending } }),
        )
        pending = UnprocessedItems?.[this.#tableName] ?? []
      }
    }
  }
}
