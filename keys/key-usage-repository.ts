import { randomUUID } from 'node:crypto'
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb'
import { RATE_LIMIT_TABLE } from '#shared/data/table-keys.ts'
import { isConditionFailure, oldItemOf } from '#shared/errors/datastore-errors.ts'
import { DAY_MS, MINUTE_MS, utcWindowsAt } from '#shared/rate-limit/rate-limit-windows.ts'
import {
  ATTRIBUTES,
  dayItemKey,
  minuteAttribute,
  numberOf,
  rejectedAttribute,
  USAGE_RETENTION_DAYS,
} from '#shared/rate-limit/rate-limiter.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'

/**
 * What support and billing read of the rate limiter (docs/rate-limits-and-keys.md, "Usage"): the
 * limiter's own day items, so every number here is the one the keys' `X-RateLimit-*` headers
 * show, admitted requests only. Items are kept USAGE_RETENTION_DAYS after their day (TTL), which
 * is the usage history; no write is added to any request for it.
 */

/** One key's admitted requests on one UTC day. */
export interface KeyDayUsage {
  keyId: string
  /** `yyyy-mm-dd` (UTC). */
  day: string
  requests: number
}

/** A key's state as the limiter sees it now. */
export interface KeyLimiterState {
  /** Admitted requests in the current UTC minute and day. */
  minute: number
  day: number
  /** Epoch ms the running suspension ends at; undefined when the key is not suspended. */
  suspendedUntil: number | undefined
  /**
   * Start (epoch ms) of the last UTC minute in which the limiter saw a request of the key,
   * admitted or refused, within the retention; undefined when none.
   */
  lastSeenMinute: number | undefined
}

/** What a lift leaves on the item it changed: until when the suspension ran, and which lift. */
const LIFTED = { until: 'liftedUntil', by: 'liftedBy' } as const

const DAY_ID = /^\d{4}-\d{2}-\d{2}$/
const MONTH_ID = /^(\d{4})-(0[1-9]|1[0-2])$/
/** BatchGetItem takes at most 100 keys per call. */
const BATCH = 100

const dayStartOf = (dayId: string) => Date.parse(`${dayId}T00:00:00Z`)

/** The UTC days from `from` to `to`, both included (`yyyy-mm-dd`). */
export const daysBetween = (from: string, to: string): string[] => {
  if (!DAY_ID.test(from) || !DAY_ID.test(to) || Number.isNaN(dayStartOf(from))) return []
  const days: string[] = []
  for (let at = dayStartOf(from); at <= dayStartOf(to); at += DAY_MS) {
    days.push(utcWindowsAt(at).dayId)
  }
  return days
}

/** The UTC days of a month `yyyy-mm`, or undefined when it is not one. */
export const daysOfMonth = (month: string): string[] | undefined => {
  const match = MONTH_ID.exec(month)
  if (!match) return undefined
  const start = Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)
  const end = Date.UTC(Number(match[1]), Number(match[2]), 0)
  return daysBetween(utcWindowsAt(start).dayId, utcWindowsAt(end).dayId)
}

/** The newest minute (of its day) any counter of the item names, as epoch ms. */
const lastMinuteOf = (dayId: string, item: Record<string, unknown>): number | undefined => {
  let last: number | undefined
  for (const name of Object.keys(item)) {
    const match = /^[mr](\d{2})(\d{2})$/.exec(name)
    if (!match) continue
    const minute = Number(match[1]) * 60 + Number(match[2])
    if (last === undefined || minute > last) last = minute
  }
  return last === undefined ? undefined : dayStartOf(dayId) + last * MINUTE_MS
}

const keyAndDayOf = (pk: string): { keyId: string; day: string } | undefined => {
  const at = pk.lastIndexOf('#')
  const day = pk.slice(at + 1)
  return at > 0 && DAY_ID.test(day) ? { keyId: pk.slice(0, at), day } : undefined
}

export class KeyUsageRepository {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #clock: Clock

  constructor({
    client,
    tableName,
    clock = systemClock,
  }: {
    client: DynamoDBDocumentClient
    tableName: string
    clock?: Clock
  }) {
    this.#client = client
    this.#tableName = tableName
    this.#clock = clock
  }

  /** Items by partition key, read consistently (BatchGetItem, 100 a call, unprocessed retried). */
  async #items(pks: string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>()
    for (let start = 0; start < pks.length; start += BATCH) {
      let keys: Record<string, unknown>[] = pks
        .slice(start, start + BATCH)
        .map((pk) => ({ [RATE_LIMIT_TABLE.partitionKey]: pk }))
      for (let attempt = 0; keys.length > 0; attempt += 1) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt))
        if (attempt > 8) throw new Error('DynamoDB left keys unprocessed after 8 retries')
        const answer = await this.#client.send(
          new BatchGetCommand({
            RequestItems: { [this.#tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        )
        for (const item of answer.Responses?.[this.#tableName] ?? []) {
          found.set(String(item[RATE_LIMIT_TABLE.partitionKey]), item)
        }
        keys = (answer.UnprocessedKeys?.[this.#tableName]?.Keys ?? []) as Record<string, unknown>[]
      }
    }
    return found
  }

  /** Admitted requests of one key per day from `from` to `to` (days without any: 0). */
  async days(keyId: string, from: string, to: string): Promise<KeyDayUsage[]> {
    const days = daysBetween(from, to)
    const items = await this.#items(days.map((day) => this.#pk(keyId, day)))
    return days.map((day) => ({
      keyId,
      day,
      requests: numberOf(items.get(this.#pk(keyId, day))?.[ATTRIBUTES.day]),
    }))
  }

  /** Admitted requests of each key on one day (keys without any: 0). */
  async countsOn(keyIds: string[], day: string): Promise<Record<string, number>> {
    const items = await this.#items(keyIds.map((keyId) => this.#pk(keyId, day)))
    return Object.fromEntries(
      keyIds.map((keyId) => [keyId, numberOf(items.get(this.#pk(keyId, day))?.[ATTRIBUTES.day])]),
    )
  }

  /**
   * The keys whose suspension runs now, with when it ends (epoch ms): today's and tomorrow's
   * items, as `state` reads them (a suspension that crosses midnight is on both). For `keys list`.
   */
  async suspensions(keyIds: string[]): Promise<Record<string, number>> {
    const nowMs = this.#clock()
    const days = [utcWindowsAt(nowMs).dayId, utcWindowsAt(nowMs + DAY_MS).dayId]
    const items = await this.#items(
      keyIds.flatMap((keyId) => days.map((day) => this.#pk(keyId, day))),
    )
    const running: Record<string, number> = {}
    for (const keyId of keyIds) {
      const until = Math.max(
        ...days.map((day) =>
          numberOf(items.get(this.#pk(keyId, day))?.[ATTRIBUTES.suspendedUntil]),
        ),
      )
      if (until > nowMs) running[keyId] = until
    }
    return running
  }

  /**
   * Every key's admitted requests per day of a month, revoked keys included (one row per key and
   * day with a count), by key then day. A Scan: it reads the whole table once (about 100 days of
   * items per key), which a monthly export can afford and a request path never does.
   */
  async month(month: string): Promise<KeyDayUsage[]> {
    const days = daysOfMonth(month)
    if (!days) throw new RangeError(`Not a month: ${month} (expected yyyy-mm)`)
    const rows: KeyDayUsage[] = []
    let startKey: Record<string, unknown> | undefined
    do {
      const page = await this.#client.send(
        new ScanCommand({
          TableName: this.#tableName,
          ProjectionExpression: '#pk, #day',
          FilterExpression: 'contains(#pk, :month) AND #day > :zero',
          ExpressionAttributeNames: {
            '#pk': RATE_LIMIT_TABLE.partitionKey,
            '#day': ATTRIBUTES.day,
          },
          ExpressionAttributeValues: { ':month': `#${month}-`, ':zero': 0 },
          ConsistentRead: true,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      )
      for (const item of page.Items ?? []) {
        const parts = keyAndDayOf(String(item[RATE_LIMIT_TABLE.partitionKey]))
        if (parts?.day.startsWith(`${month}-`)) {
          rows.push({ ...parts, requests: numberOf(item[ATTRIBUTES.day]) })
        }
      }
      startKey = page.LastEvaluatedKey
    } while (startKey)
    return rows.sort((a, b) =>
      a.keyId === b.keyId ? a.day.localeCompare(b.day) : a.keyId.localeCompare(b.keyId),
    )
  }

  /** The key's counts now, its suspension, and the last minute it was seen in. */
  async state(keyId: string): Promise<KeyLimiterState> {
    const nowMs = this.#clock()
    const today = utcWindowsAt(nowMs)
    const days = daysBetween(
      utcWindowsAt(nowMs - USAGE_RETENTION_DAYS * DAY_MS).dayId,
      utcWindowsAt(nowMs + DAY_MS).dayId,
    )
    const items = await this.#items(days.map((day) => this.#pk(keyId, day)))
    const todayItem = items.get(this.#pk(keyId, today.dayId)) ?? {}
    let lastSeenMinute: number | undefined
    for (const day of days) {
      const item = items.get(this.#pk(keyId, day))
      if (item) lastSeenMinute = lastMinuteOf(day, item) ?? lastSeenMinute
    }
    // A suspension that crosses midnight is written to both days' items: either may hold it.
    const suspendedUntil = Math.max(
      numberOf(todayItem[ATTRIBUTES.suspendedUntil]),
      numberOf(items.get(this.#pk(keyId, utcWindowsAt(nowMs + DAY_MS).dayId))?.suspendedUntil),
    )
    return {
      minute: numberOf(todayItem[minuteAttribute(today.minuteOfDay)]),
      day: numberOf(todayItem[ATTRIBUTES.day]),
      suspendedUntil: suspendedUntil > nowMs ? suspendedUntil : undefined,
      lastSeenMinute,
    }
  }

  /**
   * Ends the key's suspension: removes it from today's and tomorrow's items, with this minute's
   * refused count (or the next refusal would suspend the key again at once). The minute's and
   * the day's admitted counts stay: the key gets 200 again once its minute allows. Warm
   * instances read the item again within SUSPENSION_RECHECK_MS. Returns when the lifted
   * suspension would have ended, or undefined when the key was not suspended.
   */
  async lift(keyId: string): Promise<number | undefined> {
    const nowMs = this.#clock()
    const today = utcWindowsAt(nowMs)
    const tomorrow = utcWindowsAt(nowMs + DAY_MS)
    // Names this lift on the items it changes: see #liftOn.
    const token = randomUUID()
    let lifted: number | undefined
    for (const [windows, extra] of [
      [today, rejectedAttribute(today.minuteOfDay)],
      [tomorrow, undefined],
    ] as const) {
      const until = await this.#liftOn(dayItemKey(keyId, windows.dayId), { nowMs, token, extra })
      if (until !== undefined) lifted = Math.max(lifted ?? 0, until)
    }
    return lifted
  }

  /**
   * Removes the running suspension of one day's item (and `extra`, the minute's refused count),
   * keeping when it would have ended and which lift removed it (`liftedUntil`, `liftedBy`): when
   * the SDK sends the write again because DynamoDB applied it but answered late, the retry finds
   * no suspension, and the item, naming this lift, says it was this lift's (not "nothing to lift",
   * which would skip the wait for warm instances). Undefined when there was none to lift.
   */
  async #liftOn(
    key: Record<string, string>,
    { nowMs, token, extra }: { nowMs: number; token: string; extra: string | undefined },
  ): Promise<number | undefined> {
    try {
      const { Attributes } = await this.#client.send(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: key,
          UpdateExpression: `SET #liftedUntil = #suspendedUntil, #liftedBy = :token REMOVE #suspendedUntil${extra ? ', #rejected' : ''}`,
          ConditionExpression: '#suspendedUntil > :now',
          ExpressionAttributeNames: {
            '#suspendedUntil': ATTRIBUTES.suspendedUntil,
            '#liftedUntil': LIFTED.until,
            '#liftedBy': LIFTED.by,
            ...(extra ? { '#rejected': extra } : {}),
          },
          ExpressionAttributeValues: { ':now': nowMs, ':token': token },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      return numberOf(Attributes?.[LIFTED.until])
    } catch (error) {
      // No running suspension on that day's item (or no item): nothing to lift there, unless
      // this very lift removed it a moment ago.
      if (!isConditionFailure(error)) throw error
      const found =
        oldItemOf(error) ??
        (await this.#items([String(key[RATE_LIMIT_TABLE.partitionKey])])).values().next().value
      return found?.[LIFTED.by] === token ? numberOf(found[LIFTED.until]) : undefined
    }
  }

  #pk(keyId: string, day: string): string {
    return String(dayItemKey(keyId, day)[RATE_LIMIT_TABLE.partitionKey])
  }
}
