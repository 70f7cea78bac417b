import {
  type CloudWatchLogsEvent,
  cloudWatchLogsEvent,
  type LogEvent,
  UNAUTHORIZED_STATUS,
} from '#functions/address-block/access-log-events.ts'
import type { Clock, Timers } from '#shared/time/clock.ts'

/**
 * The stage's access log and its subscription filter, locally. The local gateway writes one
 * record per request it answers past the edge (what API Gateway writes to
 * `/petstore/<stage>/api-access`: a request the WAF refused never reaches it), with the fields the
 * deployed format gives them (`ip`, `status` as a string, `httpMethod`, `path`...). Records the
 * subscription's filter matches (unauthorized answers: `{ $.status = "401" }`) are delivered in
 * batches, as CloudWatch Logs delivers them, to the same handler the stage's subscription invokes:
 * one `{ awslogs: { data } }` event at most every `batchMs` (AWS: "usually less than three
 * minutes" after ingestion; here a second), one delivery at a time.
 */
export interface AccessLogRecord {
  requestId: string
  requestTime: string
  ip: string
  httpMethod: string
  path: string
  status: string
}

/** How long records wait to be delivered together. */
export const LOCAL_LOG_DELIVERY_MS = 1_000
/** The most log events in one delivery (CloudWatch Logs batches up to about 1 MB). */
const MAX_BATCH = 10_000

export interface LocalLogSubscriptionOptions {
  deliver: (event: CloudWatchLogsEvent) => Promise<unknown>
  clock: Clock
  timers: Timers
  batchMs?: number
  onError?: (message: string, error: unknown) => void
}

export class LocalLogSubscription {
  readonly #deliver: LocalLogSubscriptionOptions['deliver']
  readonly #clock: Clock
  readonly #timers: Timers
  readonly #batchMs: number
  readonly #onError: NonNullable<LocalLogSubscriptionOptions['onError']>
  #pending: LogEvent[] = []
  #timer: unknown
  #delivering: Promise<void> = Promise.resolve()
  #sequence = 0
  #stopped = false

  constructor({
    deliver,
    clock,
    timers,
    batchMs = LOCAL_LOG_DELIVERY_MS,
    onError,
  }: LocalLogSubscriptionOptions) {
    this.#deliver = deliver
    this.#clock = clock
    this.#timers = timers
    this.#batchMs = batchMs
    this.#onError = onError ?? (() => undefined)
  }

  /** Writes a record to the access log; the subscription takes it when its filter matches. */
  write(record: AccessLogRecord): void {
    if (this.#stopped || record.status !== UNAUTHORIZED_STATUS) return
    this.#sequence += 1
    this.#pending.push({
      id: String(this.#sequence),
      timestamp: this.#clock(),
      message: JSON.stringify(record),
    })
    if (this.#pending.length >= MAX_BATCH) {
      void this.flush()
      return
    }
    if (this.#timer === undefined) {
      this.#timer = this.#timers.setTimeout(() => {
        this.#timer = undefined
        void this.flush()
      }, this.#batchMs)
    }
  }

  /** Delivers what is pending now (after any delivery under way); resolves when it was handled. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) {
      this.#timers.clearTimeout(this.#timer)
      this.#timer = undefined
    }
    const logEvents = this.#pending
    this.#pending = []
    const delivery = this.#delivering.then(async () => {
      if (logEvents.length === 0) return
      try {
        await this.#deliver(
          cloudWatchLogsEvent({
            messageType: 'DATA_MESSAGE',
            owner: '000000000000',
            logGroup: '/petstore/local/api-access',
            logStream: 'local',
            subscriptionFilters: ['petstore-local-unauthorized-to-address-block'],
            logEvents,
          }),
        )
      } catch (error) {
        this.#onError('The address-block function failed on a delivery of the access log', error)
      }
    })
    this.#delivering = delivery
    return delivery
  }

  /** Delivers what is pending and takes no more. */
  async stop(): Promise<void> {
    await this.flush()
    this.#stopped = true
  }
}
