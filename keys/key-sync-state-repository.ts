import {
  type DynamoDBDocumentClient,
  GetCommand,
  type NativeAttributeValue,
  NumberValue,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb'
import { KEY_MIRROR_TABLE } from '#shared/data/table-keys.ts'
import { isConditionFailure, oldItemOf } from '#shared/errors/datastore-errors.ts'

/** A mass removal the guard withholds until later runs agree (see removal-guard.ts). */
export interface HeldRemoval {
  /** Identifies the exact set of key hashes the run would remove. */
  digest: string
  count: number
  /** When a run first saw this removal (ms since the epoch). */
  firstSeenAt: number
  /** Why it is held (removal-guard.ts HoldCause) and the ids of its keys, for `keys held`. */
  cause?: string
  keyIds?: string[]
}

/** A stage plan whose keys could not be read (throttled, denied, a broken listing). */
export interface UnreadPlan {
  /** Runs in a row that failed to read it. */
  failures: number
  /** When the first of them failed (ms since the epoch). */
  since: number
  /** Not tried by the rotation before this instant (a backoff; ms since the epoch). */
  retryAt: number
  /** The last error's name. */
  reason: string
}

/** What one sync run leaves for the next, in the mirror table's `#key-sync` item. */
export interface KeySyncState {
  /** Removals withheld, by group (a usage plan id, or `*` for the whole mirror). */
  heldRemovals?: Record<string, HeldRemoval>
  /** Where the rotation through the stage's plans stopped (the last plan id read). */
  cursor?: string
  /** When the rotation in progress began (ms since the epoch). */
  rotationStartedAt?: number
  /**
   * When the last finished rotation began: every plan has been read since (ms since the epoch).
   */
  lastCompleteAt?: number
  /**
   * Plan and key ids named by management events not yet read by a run: a run reads them first,
   * and a run that ends with some left takes the lease again.
   */
  pendingIds?: string[]
  /**
   * When each pending id was named (ms since the epoch; every time, oldest first): ids are read
   * in arrival order, and a rotation that began after an id was named settles it.
   */
  pendingNamedAt?: Record<string, number[]>
  /** Runs that tried a pending id's plan and failed to read it: after a few it stops blocking. */
  namedTries?: Record<string, number>
  /** Stage plans the last runs could not read, and when the rotation tries them again. */
  unreadPlans?: Record<string, UnreadPlan>
  /** The mirror changed but the authorizer cache could not be flushed: the next run retries. */
  flushPending?: boolean
  /**
   * Ids of the usage plans attached to the stage and of their keys (enabled or not): a
   * management event naming none of them concerns another stage.
   */
  stageIds?: string[]
  /** Start of the last successful run (ms since the epoch). */
  lastSuccessAt?: number
}

export interface KeySyncStateRepositoryOptions {
  client: DynamoDBDocumentClient
  tableName: string
}

type Item = Record<string, NativeAttributeValue>

const LEASE_KEY = { [KEY_MIRROR_TABLE.partitionKey]: KEY_MIRROR_TABLE.syncStateKey }

const num = (value: unknown): number | undefined =>
  value instanceof NumberValue
    ? Number(value.toString())
    : typeof value === 'number'
      ? value
      : undefined

const toHeld = (value: unknown): HeldRemoval | undefined => {
  const held = value as Item | undefined
  const digest = held?.digest
  const count = num(held?.count)
  const firstSeenAt = num(held?.firstSeenAt)
  if (typeof digest !== 'string' || count === undefined || firstSeenAt === undefined)
    return undefined
  return {
    digest,
    count,
    firstSeenAt,
    ...(typeof held?.cause === 'string' ? { cause: held.cause } : {}),
    ...(Array.isArray(held?.keyIds) ? { keyIds: held.keyIds.map(String) } : {}),
  }
}

const toUnread = (value: unknown): UnreadPlan | undefined => {
  const item = value as Item | undefined
  const failures = num(item?.failures)
  const since = num(item?.since)
  const retryAt = num(item?.retryAt)
  return failures !== undefined && since !== undefined && retryAt !== undefined
    ? { failures, since, retryAt, reason: String(item?.reason ?? 'unknown') }
    : undefined
}

/** A map attribute's entries, each converted (those that do not convert are dropped). */
const entriesOf = <T>(value: unknown, convert: (entry: unknown) => T | undefined) => {
  const out: Record<string, T> = {}
  if (typeof value !== 'object' || value === null) return out
  for (const [name, entry] of Object.entries(value as Item)) {
    const converted = convert(entry)
    if (converted !== undefined) out[name] = converted
  }
  return out
}

/**
 * A pending entry is `<ms>#<id>`: the set keeps one entry per naming, so concurrent events add
 * and never overwrite, and the run that reads an id deletes exactly the entries it saw.
 */
const PENDING_SEPARATOR = '#'
const pendingEntry = (id: string, namedAt: number) =>
  namedAt === 0 ? id : `${namedAt}${PENDING_SEPARATOR}${id}`

const toPending = (value: unknown): Pick<KeySyncState, 'pendingIds' | 'pendingNamedAt'> => {
  if (!(value instanceof Set) || value.size === 0) return {}
  const namedAt: Record<string, number[]> = {}
  for (const entry of [...value].map(String)) {
    const at = entry.indexOf(PENDING_SEPARATOR)
    // An entry from before arrival order was kept counts as the oldest.
    const id = at < 0 ? entry : entry.slice(at + 1)
    const time = at < 0 ? 0 : Number(entry.slice(0, at))
    namedAt[id] = [...(namedAt[id] ?? []), time].sort((a, b) => a - b)
  }
  const first = (id: string) => namedAt[id]?.[0] ?? 0
  const pendingIds = Object.keys(namedAt).sort((a, b) => first(a) - first(b) || a.localeCompare(b))
  return { pendingIds, pendingNamedAt: namedAt }
}

const toState = (item: Item | undefined): KeySyncState => {
  if (!item) return {}
  const heldRemovals = entriesOf(item.heldRemovals, toHeld)
  const unreadPlans = entriesOf(item.unreadPlans, toUnread)
  const namedTries = entriesOf(item.namedTries, num)
  const lastSuccessAt = num(item.lastSuccessAt)
  const lastCompleteAt = num(item.lastCompleteAt)
  const rotationStartedAt = num(item.rotationStartedAt)
  return {
    ...(Object.keys(heldRemovals).length > 0 ? { heldRemovals } : {}),
    ...(Object.keys(unreadPlans).length > 0 ? { unreadPlans } : {}),
    ...(Object.keys(namedTries).length > 0 ? { namedTries } : {}),
    ...(typeof item.rotationCursor === 'string' ? { cursor: item.rotationCursor } : {}),
    ...(lastCompleteAt !== undefined ? { lastCompleteAt } : {}),
    ...(rotationStartedAt !== undefined ? { rotationStartedAt } : {}),
    ...toPending(item.pendingIds),
    ...(item.flushPending === true ? { flushPending: true } : {}),
    ...(Array.isArray(item.stageIds) ? { stageIds: item.stageIds.map(String) } : {}),
    ...(lastSuccessAt !== undefined ? { lastSuccessAt } : {}),
  }
}

/**
 * Owns the key sync's own item in the key mirror table: a lease, so that two runs never rebuild
 * the mirror at once (the function reserves no concurrency: a new account has none to spare), and
 * the state one run hands the next. Every write is conditional on holding the lease, so a run
 * whose lease expired cannot overwrite a newer run's state.
 */
export class KeySyncStateRepository {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string

  constructor({ client, tableName }: KeySyncStateRepositoryOptions) {
    this.#client = client
    this.#tableName = tableName
  }

  /** The state, read strongly consistent (it decides whether a run's removals go ahead). */
  async get(): Promise<KeySyncState> {
    return toState(await this.#item())
  }

  /**
   * Takes the lease until `nowMs + ttlMs` unless another owner holds an unexpired one; returns
   * the state when taken, undefined when not. A run that dies keeps the lease until it expires.
   * `owner` is the run's own token (a fresh UUID per try): when the SDK sends the write again
   * because DynamoDB applied the first attempt but answered it late, the retry finds the lease held
   * by this very owner and takes it again (the same values), instead of failing its condition on the
   * run's own lease and leaving it stranded for ttlMs.
   */
  async acquire(owner: string, nowMs: number, ttlMs: number): Promise<KeySyncState | undefined> {
    try {
      const { Attributes } = await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: LEASE_KEY,
          UpdateExpression: 'SET leaseOwner = :owner, leaseExpiresAt = :expires',
          ConditionExpression:
            'attribute_not_exists(leaseExpiresAt) OR leaseExpiresAt < :now OR leaseOwner = :owner',
          ExpressionAttributeValues: { ':owner': owner, ':expires': nowMs + ttlMs, ':now': nowMs },
          ReturnValues: 'ALL_NEW',
        }),
      )
      return toState(Attributes)
    } catch (error) {
      if (isConditionFailure(error)) return undefined
      throw error
    }
  }

  /**
   * Adds ids a management event names to the pending set (a string set: concurrent events add,
   * never overwrite). Needs no lease: the event's own run, or the run holding the lease, reads
   * them.
   */
  async addPending(ids: readonly string[], namedAt: number = Date.now()): Promise<void> {
    if (ids.length === 0) return
    await this.#client.send(
      new UpdateCommand({
        TableName: this.#tableName,
        Key: LEASE_KEY,
        UpdateExpression: 'ADD pendingIds :ids',
        ExpressionAttributeValues: {
          ':ids': new Set(ids.map((id) => pendingEntry(id, Math.round(namedAt)))),
        },
      }),
    )
  }

  /**
   * Saves the state a successful run leaves and gives the lease up, in one write; the pending
   * ids the run read (`state.pendingIds`, their entries as `state.pendingNamedAt` gives them, or
   * every entry the run saw when it gives none) leave the set, entries added meanwhile stay.
   * The write names its run (`completedBy`): when the SDK sends it again because DynamoDB applied
   * the first attempt but answered it late, the retry fails its condition (the lease is gone), and
   * the item, naming this run, says the save is done. Any other refusal (the lease expired and
   * another run took it) still fails the run.
   */
  async complete(owner: string, state: KeySyncState): Promise<void> {
    const set = [
      'lastSuccessAt = :lastSuccessAt',
      'flushPending = :flushPending',
      'completedBy = :owner',
    ]
    const remove = ['leaseOwner', 'leaseExpiresAt', 'heldRemoval']
    const values: Item = {
      ':owner': owner,
      ':lastSuccessAt': state.lastSuccessAt ?? 0,
      ':flushPending': state.flushPending === true,
      ':held': state.heldRemovals ?? {},
      ':unread': state.unreadPlans ?? {},
      ':tries': state.namedTries ?? {},
    }
    set.push('heldRemovals = :held', 'unreadPlans = :unread', 'namedTries = :tries')
    if (state.cursor !== undefined) {
      set.push('rotationCursor = :cursor')
      values[':cursor'] = state.cursor
    } else remove.push('rotationCursor')
    if (state.rotationStartedAt !== undefined) {
      set.push('rotationStartedAt = :rotationStartedAt')
      values[':rotationStartedAt'] = state.rotationStartedAt
    } else remove.push('rotationStartedAt')
    if (state.lastCompleteAt !== undefined) {
      set.push('lastCompleteAt = :lastCompleteAt')
      values[':lastCompleteAt'] = state.lastCompleteAt
    }
    if (state.stageIds) {
      set.push('stageIds = :stageIds')
      values[':stageIds'] = state.stageIds
    }
    const drained = (state.pendingIds ?? []).flatMap((id) => {
      const times = state.pendingNamedAt?.[id]
      return times ? times.map((at) => pendingEntry(id, at)) : [id]
    })
    if (drained.length > 0) values[':drained'] = new Set(drained)
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: LEASE_KEY,
          UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}${drained.length > 0 ? ' DELETE pendingIds :drained' : ''}`,
          ConditionExpression: 'leaseOwner = :owner',
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
    } catch (error) {
      if (!isConditionFailure(error)) throw error
      const found = oldItemOf(error) ?? (await this.#item())
      if (found?.completedBy !== owner) throw error
    }
  }

  /** The item as stored, read strongly consistent (where a refused write did not return it). */
  async #item(): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#tableName, Key: LEASE_KEY, ConsistentRead: true }),
    )
    return Item
  }

  /**
   * Drops the lease, whoever holds it. Only for a table's sole user that knows no run is live:
   * the local server at start, when a server killed mid-run left its lease behind.
   */
  async breakLease(): Promise<void> {
    await this.#removeLease({ ConditionExpression: 'attribute_exists(leaseOwner)' })
  }

  /** Gives the lease up after a failed run, keeping the state as the last success left it. */
  async release(owner: string): Promise<void> {
    // A condition failure: expired and taken over by a newer run, nothing of ours to give up.
    await this.#removeLease({
      ConditionExpression: 'leaseOwner = :owner',
      ExpressionAttributeValues: { ':owner': owner },
    })
  }

  /** Removes the lease if `condition` holds; a lease the condition does not match stays. */
  async #removeLease(condition: {
    ConditionExpression: string
    ExpressionAttributeValues?: Record<string, string>
  }): Promise<void> {
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: LEASE_KEY,
          UpdateExpression: 'REMOVE leaseOwner, leaseExpiresAt',
          ...condition,
        }),
      )
    } catch (error) {
      if (!isConditionFailure(error)) throw error
    }
  }
}
