import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import { RATE_LIMIT_TABLE } from '#shared/data/table-keys.ts'
import { isConditionFailure, oldItemOf } from '#shared/errors/datastore-errors.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import {
  minuteLabel,
  SUSPENSION_MS,
  secondsUntil,
  type UtcWindows,
  utcWindowsAt,
  type WindowState,
} from './rate-limit-windows.ts'

/**
 * Plan rate limits in DynamoDB: fixed UTC-minute and UTC-day windows per API key, exact under
 * any number of concurrent Lambda instances, one UpdateItem per admitted request.
 *
 * Design: one item per key and UTC day, `pk = <keyId>#<yyyy-mm-dd>`, holding
 * - `day`: admitted requests of the day, `m<hhmm>`: admitted requests of that minute,
 * - `r<hhmm>`: rejected requests of that minute, `suspendedUntil` (epoch ms), `expiresAt` (TTL).
 * A request is admitted by a single conditional UpdateItem,
 *   ADD day :1, m<hhmm> :1  IF day < perDay AND m<hhmm> < perMinute AND NOT suspendedUntil > now
 * so both windows are checked and counted atomically in one round trip, and a rejected request
 * changes no admitted count. Naming the minute counter after its minute resets the minute window
 * without a read; the same update REMOVEs the counters of the previous 15 minutes. That bounds
 * the item, though not to 1 KB: a minute's counters stay when no write follows within 15
 * minutes, so a burst every 16 minutes keeps 90 minutes' `m`/`r` pairs: at most 1,508 bytes with
 * limits under 10,000 a minute and up to 1,000,000 a day, and a 12-character key id (the local
 * ids; API Gateway's are shorter). Such a key pays 2 write units per
 * write (DynamoDB bills an update on the larger of the item before and after, refused ones too)
 * instead of the 1 that steady traffic (under 100 bytes) pays.
 * On a condition failure the old item (returned by DynamoDB with ReturnValuesOnConditionCheckFailure,
 * or read with a consistent GetItem where the store does not support it, e.g. dynalite) says why:
 * suspended, day quota used up (takes precedence: it lasts longer) or minute limit reached. The
 * rejection is then counted in `r<hhmm>`; when that count exceeds perMinute the key is suspended
 * for 15 minutes, written to today's item and, if the suspension crosses UTC midnight, also to
 * tomorrow's, so the admission condition alone enforces it. The condition on `suspendedUntil`
 * makes the first suspension win; it is never extended while it runs, and requests refused while
 * suspended are not counted (so they cannot chain suspensions).
 *
 * DynamoDB calls per request:
 * - admitted: 1 (UpdateItem);
 * - rate_limited / quota_exceeded: 2 (failed UpdateItem, UpdateItem counting the rejection),
 *   3 where the failed update does not return the old item (dynalite: + GetItem);
 * - the rejection that starts a suspension: 1 more (2 in parallel when it crosses midnight);
 * - key_suspended: 1 (2 on dynalite), and 0 for SUSPENSION_RECHECK_MS once this instance has
 *   seen the suspension: it is remembered that long at most, then read again, so a suspension
 *   the keys CLI lifts (KeyUsageRepository.lift) ends on every warm instance within seconds.
 * Rejected alternatives: two items in TransactWriteItems (one round trip, but four write units and
 * transaction conflicts between concurrent requests of one key), two sequential updates with a
 * compensating decrement (two round trips), sliding windows (not what the plans promise).
 *
 * Failure policy: if the store fails before a decision, the request is admitted (the API Gateway
 * usage plan enforces the same limits as a backstop), the decision carries `storeError` so the
 * middleware logs and counts it, and the headers report the plan limits with nothing used.
 *
 * Ambiguous writes: a counting write (ADD) that got no answer (a timeout, a dropped connection)
 * or a 5xx may have been applied. The SDK would send it again, and a first attempt that did land
 * would count the request twice (two instances on one table then admitted 40 and 49 of a 60 a
 * minute plan under a slow store). So these writes are never retried on an ambiguous outcome
 * (withoutAmbiguousRetries): the request follows the failure policy, counted once or not at all.
 * Only answers DynamoDB gives without applying the write (4xx: throttling, a failed condition)
 * are retried or read. The bound, per key and minute: admitted = the plan's limit, plus the
 * ambiguous writes that did not land (each one flagged as a store failure); never fewer.
 */
export type RateLimitOutcome = 'admitted' | 'rate_limited' | 'quota_exceeded' | 'key_suspended'

export interface RateLimitDecision {
  outcome: RateLimitOutcome
  /** The instant the decision was made at (the limiter's clock). */
  nowMs: number
  minute: WindowState
  day: WindowState
  /** For rejections: seconds until the window (or suspension) that refused the request ends. */
  retryAfterSeconds?: number
  /** Set when the store failed; the decision then follows the failure policy. */
  storeError?: unknown
}

export interface RateLimiter {
  /**
   * Counts one request of the key if it is within its limits. Never rejects: a store failure is
   * a decision too (the failure policy), flagged with `storeError`.
   */
  consume(keyId: string, limits: PlanLimits): Promise<RateLimitDecision>
}

interface Counts {
  minute: number
  day: number
}

const windowStates = (limits: PlanLimits, windows: UtcWindows, counts: Counts) => ({
  minute: {
    limit: limits.perMinute,
    remaining: Math.max(0, limits.perMinute - counts.minute),
    resetAtMs: windows.minuteEndMs,
  },
  day: {
    limit: limits.perDay,
    remaining: Math.max(0, limits.perDay - counts.day),
    resetAtMs: windows.dayEndMs,
  },
})

const countedDecision = (
  outcome: Exclude<RateLimitOutcome, 'key_suspended'>,
  limits: PlanLimits,
  nowMs: number,
  counts: Counts,
): RateLimitDecision => {
  const windows = utcWindowsAt(nowMs)
  const states = windowStates(limits, windows, counts)
  if (outcome === 'admitted') return { outcome, nowMs, ...states }
  const resetAtMs = outcome === 'rate_limited' ? windows.minuteEndMs : windows.dayEndMs
  return { outcome, nowMs, ...states, retryAfterSeconds: secondsUntil(resetAtMs, nowMs) }
}

/** While suspended nothing is available in either window until the suspension ends. */
export const suspendedDecision = (
  limits: PlanLimits,
  nowMs: number,
  suspendedUntilMs: number,
): RateLimitDecision => ({
  outcome: 'key_suspended',
  nowMs,
  minute: { limit: limits.perMinute, remaining: 0, resetAtMs: suspendedUntilMs },
  day: { limit: limits.perDay, remaining: 0, resetAtMs: suspendedUntilMs },
  retryAfterSeconds: secondsUntil(suspendedUntilMs, nowMs),
})

/** Failure policy: admit, report the plan limits as if nothing were used, flag the failure. */
export const admittedOnStoreFailure = (
  limits: PlanLimits,
  nowMs: number,
  storeError: unknown,
): RateLimitDecision => ({
  ...countedDecision('admitted', limits, nowMs, { minute: 0, day: 0 }),
  storeError,
})

/** A counting write DynamoDB may have applied: it got no answer, or a 5xx. */
export class AmbiguousWriteError extends Error {
  override readonly name = 'AmbiguousWriteError'
  /** Not `cause`: the SDK's retry classification follows `cause` and would retry a timeout. */
  readonly original: unknown

  constructor(original: unknown) {
    super(`A counting write may have been applied: ${(original as Error)?.message ?? original}`)
    this.original = original
  }
}

/** An answer of DynamoDB's that says the write was not applied (4xx: throttled, refused). */
const answeredUnapplied = (error: unknown): boolean => {
  const status = (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode
  return typeof status === 'number' && status >= 400 && status < 500
}

/**
 * `command`, sent at most once when its outcome is ambiguous: inside the SDK's retry step, an
 * error without a 4xx answer becomes an AmbiguousWriteError, which the SDK does not retry
 * (it is neither throttling, transient nor a server error by its classification).
 */
export const withoutAmbiguousRetries = <Command extends UpdateCommand>(
  command: Command,
): Command => {
  command.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args)
      } catch (error) {
        if (answeredUnapplied(error)) throw error
        throw new AmbiguousWriteError(error)
      }
    },
    // override: the document client copies a command's stack into the inner command's.
    { step: 'finalizeRequest', priority: 'low', name: 'ambiguousWritesNotRetried', override: true },
  )
  return command
}

/** Attribute names of the day item (its key and TTL attribute are in RATE_LIMIT_TABLE). */
export const ATTRIBUTES = {
  day: 'day',
  suspendedUntil: 'suspendedUntil',
  minutePrefix: 'm',
  rejectedPrefix: 'r',
} as const

/** Counters of this many previous minutes are removed by each write (bounds the item size). */
const STALE_MINUTES = 15
/**
 * Items outlive their day by USAGE_RETENTION_DAYS and an hour: the day's admitted count is the
 * usage history the keys CLI reads (`keys usage`, the month export). TTL is lazy anyway; the
 * limiter's correctness never depends on it.
 */
export const USAGE_RETENTION_DAYS = 100
const TTL_GRACE_SECONDS = USAGE_RETENTION_DAYS * 86_400 + 3_600
/** How long an instance trusts a suspension it has seen before reading the item again. */
export const SUSPENSION_RECHECK_MS = 5_000
/** Upper bound of remembered suspensions per instance. */
const MAX_REMEMBERED_SUSPENSIONS = 10_000

export const dayItemKey = (keyId: string, dayId: string) => ({
  [RATE_LIMIT_TABLE.partitionKey]: `${keyId}#${dayId}`,
})

export const minuteAttribute = (minuteOfDay: number) =>
  `${ATTRIBUTES.minutePrefix}${minuteLabel(minuteOfDay)}`
export const rejectedAttribute = (minuteOfDay: number) =>
  `${ATTRIBUTES.rejectedPrefix}${minuteLabel(minuteOfDay)}`
const expiresAtOf = (windows: UtcWindows) => Math.floor(windows.dayEndMs / 1000) + TTL_GRACE_SECONDS

/** `REMOVE` clause and names for the counters of the previous minutes of the same day. */
const staleCountersOf = (minuteOfDay: number) => {
  const names: Record<string, string> = {}
  const placeholders: string[] = []
  for (let back = 1; back <= STALE_MINUTES && minuteOfDay - back >= 0; back += 1) {
    names[`#m${back}`] = minuteAttribute(minuteOfDay - back)
    names[`#r${back}`] = rejectedAttribute(minuteOfDay - back)
    placeholders.push(`#m${back}`, `#r${back}`)
  }
  return { names, clause: placeholders.length ? ` REMOVE ${placeholders.join(', ')}` : '' }
}

/** The same minute's clause is built once: 30 names a request cost about 10 µs (npm run bench). */
let lastStale: { minuteOfDay: number; counters: ReturnType<typeof staleCountersOf> } | undefined
const staleCounters = (minuteOfDay: number) => {
  if (lastStale?.minuteOfDay !== minuteOfDay)
    lastStale = { minuteOfDay, counters: staleCountersOf(minuteOfDay) }
  return lastStale.counters
}

/** Numbers come back as NumberValue (wrapNumbers), plain numbers, or `{ N }` (raw exception Item). */
export const numberOf = (value: unknown): number => {
  if (value === undefined || value === null) return 0
  if (typeof value === 'number') return value
  if (typeof value === 'object') {
    const wrapped = value as { value?: unknown; N?: unknown }
    return Number(wrapped.value ?? wrapped.N ?? Number.NaN)
  }
  return Number(value)
}

export interface DynamoRateLimiterOptions {
  client: DynamoDBDocumentClient
  tableName: string
  clock?: Clock
}

export class DynamoRateLimiter implements RateLimiter {
  readonly #client: DynamoDBDocumentClient
  readonly #tableName: string
  readonly #clock: Clock
  /** Suspensions seen: until when they run, and when to read the item again (lifted?). */
  readonly #suspensions = new Map<string, { until: number; recheckAt: number }>()

  constructor({ client, tableName, clock = systemClock }: DynamoRateLimiterOptions) {
    this.#client = client
    this.#tableName = tableName
    this.#clock = clock
  }

  async consume(keyId: string, limits: PlanLimits): Promise<RateLimitDecision> {
    const nowMs = this.#clock()
    const remembered = this.#suspensions.get(keyId)
    if (remembered !== undefined) {
      if (remembered.recheckAt > nowMs) return suspendedDecision(limits, nowMs, remembered.until)
      this.#suspensions.delete(keyId)
    }
    try {
      return await this.#consume(keyId, limits, nowMs)
    } catch (error) {
      return admittedOnStoreFailure(limits, nowMs, error)
    }
  }

  async #consume(keyId: string, limits: PlanLimits, nowMs: number): Promise<RateLimitDecision> {
    const windows = utcWindowsAt(nowMs)
    const key = dayItemKey(keyId, windows.dayId)
    const minute = minuteAttribute(windows.minuteOfDay)
    const stale = staleCounters(windows.minuteOfDay)
    try {
      const { Attributes } = await this.#client.send(
        withoutAmbiguousRetries(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: key,
            UpdateExpression: `ADD #day :one, #minute :one SET #expiresAt = :expiresAt${stale.clause}`,
            ConditionExpression:
              '(attribute_not_exists(#day) OR #day < :perDay)' +
              ' AND (attribute_not_exists(#minute) OR #minute < :perMinute)' +
              ' AND (attribute_not_exists(#suspendedUntil) OR #suspendedUntil <= :now)',
            ExpressionAttributeNames: {
              '#day': ATTRIBUTES.day,
              '#minute': minute,
              '#suspendedUntil': ATTRIBUTES.suspendedUntil,
              '#expiresAt': RATE_LIMIT_TABLE.ttlAttribute,
              ...stale.names,
            },
            ExpressionAttributeValues: {
              ':one': 1,
              ':perDay': limits.perDay,
              ':perMinute': limits.perMinute,
              ':now': nowMs,
              ':expiresAt': expiresAtOf(windows),
            },
            ReturnValues: 'UPDATED_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      )
      return countedDecision('admitted', limits, nowMs, {
        minute: numberOf(Attributes?.[minute]),
        day: numberOf(Attributes?.[ATTRIBUTES.day]),
      })
    } catch (error) {
      if (!isConditionFailure(error)) throw error
      let item: Record<string, unknown> | undefined
      try {
        item = oldItemOf(error) ?? (await this.#read(key))
      } catch (storeError) {
        // Refused, but why is unknown: the minute limit is the conservative guess.
        const counts = { minute: limits.perMinute, day: 0 }
        return { ...countedDecision('rate_limited', limits, nowMs, counts), storeError }
      }
      return this.#reject(keyId, limits, nowMs, item ?? {})
    }
  }

  async #read(key: Record<string, string>): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#tableName, Key: key, ConsistentRead: true }),
    )
    return Item
  }

  /** The admission condition failed: say why, count the rejection, suspend on too many. */
  async #reject(
    keyId: string,
    limits: PlanLimits,
    nowMs: number,
    item: Record<string, unknown>,
  ): Promise<RateLimitDecision> {
    const windows = utcWindowsAt(nowMs)
    const suspendedUntil = numberOf(item[ATTRIBUTES.suspendedUntil])
    if (suspendedUntil > nowMs) {
      this.#remember(keyId, suspendedUntil)
      return suspendedDecision(limits, nowMs, suspendedUntil)
    }
    const counts = {
      minute: numberOf(item[minuteAttribute(windows.minuteOfDay)]),
      day: numberOf(item[ATTRIBUTES.day]),
    }
    const outcome = counts.day >= limits.perDay ? 'quota_exceeded' : 'rate_limited'
    try {
      const rejected = await this.#countRejection(keyId, windows)
      if (rejected > limits.perMinute) {
        return suspendedDecision(limits, nowMs, await this.#suspend(keyId, nowMs))
      }
      return countedDecision(outcome, limits, nowMs, counts)
    } catch (storeError) {
      // The store already refused this request; only the bookkeeping failed.
      return { ...countedDecision(outcome, limits, nowMs, counts), storeError }
    }
  }

  async #countRejection(keyId: string, windows: UtcWindows): Promise<number> {
    const rejected = rejectedAttribute(windows.minuteOfDay)
    const stale = staleCounters(windows.minuteOfDay)
    const { Attributes } = await this.#client.send(
      withoutAmbiguousRetries(
        new UpdateCommand({
          TableName: this.#tableName,
          Key: dayItemKey(keyId, windows.dayId),
          UpdateExpression: `ADD #rejected :one SET #expiresAt = :expiresAt${stale.clause}`,
          ExpressionAttributeNames: {
            '#rejected': rejected,
            '#expiresAt': RATE_LIMIT_TABLE.ttlAttribute,
            ...stale.names,
          },
          ExpressionAttributeValues: { ':one': 1, ':expiresAt': expiresAtOf(windows) },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    )
    return numberOf(Attributes?.[rejected])
  }

  /** Starts a suspension unless one is running; returns when it ends. */
  async #suspend(keyId: string, nowMs: number): Promise<number> {
    const untilMs = nowMs + SUSPENSION_MS
    const today = utcWindowsAt(nowMs)
    const days = untilMs > today.dayEndMs ? [today, utcWindowsAt(untilMs)] : [today]
    await Promise.all(
      days.map((windows) =>
        this.#client
          .send(
            new UpdateCommand({
              TableName: this.#tableName,
              Key: dayItemKey(keyId, windows.dayId),
              UpdateExpression: 'SET #suspendedUntil = :until, #expiresAt = :expiresAt',
              ConditionExpression:
                'attribute_not_exists(#suspendedUntil) OR #suspendedUntil <= :now',
              ExpressionAttributeNames: {
                '#suspendedUntil': ATTRIBUTES.suspendedUntil,
                '#expiresAt': RATE_LIMIT_TABLE.ttlAttribute,
              },
              ExpressionAttributeValues: {
                ':until': untilMs,
                ':now': nowMs,
                ':expiresAt': expiresAtOf(windows),
              },
            }),
          )
          .catch((error: unknown) => {
            // A concurrent rejection started the suspension a moment ago: it stands.
            if (!isConditionFailure(error)) throw error
          }),
      ),
    )
    this.#remember(keyId, untilMs)
    return untilMs
  }

  #remember(keyId: string, untilMs: number): void {
    const nowMs = this.#clock()
    if (this.#suspensions.size >= MAX_REMEMBERED_SUSPENSIONS) {
      for (const [id, { recheckAt }] of this.#suspensions) {
        if (recheckAt <= nowMs) this.#suspensions.delete(id)
      }
      if (this.#suspensions.size >= MAX_REMEMBERED_SUSPENSIONS) this.#suspensions.clear()
    }
    const recheckAt = Math.min(untilMs, nowMs + SUSPENSION_RECHECK_MS)
    this.#suspensions.set(keyId, { until: untilMs, recheckAt })
  }
}
