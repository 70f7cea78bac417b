import { type Clock, systemClock } from '#shared/time/clock.ts'

/** Waits, when needed, before each API Gateway management call of a sync run. */
export interface CallPacer {
  take(): Promise<void>
}

export const unpaced: CallPacer = { take: async () => undefined }

export interface TokenBucketPacerOptions {
  /** Calls allowed back to back before pacing starts. */
  burst: number
  perSecond: number
  clock?: Clock
  sleep?: (ms: number) => Promise<void>
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * A token bucket (GCRA form) for the management API's account-wide quota of 10 requests/s,
 * burst 40, which deploys and the console share: a sync of a few plans runs unpaced, a large
 * one stays below `perSecond` so it never starves `cdk deploy`. One run calls sequentially.
 */
export class TokenBucketPacer implements CallPacer {
  readonly #intervalMs: number
  readonly #toleranceMs: number
  readonly #clock: Clock
  readonly #sleep: (ms: number) => Promise<void>
  /** When the bucket would be empty again: the "theoretical arrival time" of the next call. */
  #nextFreeMs = Number.NEGATIVE_INFINITY

  constructor({ burst, perSecond, clock, sleep }: TokenBucketPacerOptions) {
    if (!(burst >= 1) || !(perSecond > 0)) throw new Error('Pacer needs burst >= 1, perSecond > 0')
    this.#intervalMs = 1000 / perSecond
    this.#toleranceMs = (burst - 1) * this.#intervalMs
    this.#clock = clock ?? systemClock
    this.#sleep = sleep ?? defaultSleep
  }

  async take(): Promise<void> {
    const now = this.#clock()
    const waitMs = Math.max(0, this.#nextFreeMs - this.#toleranceMs - now)
    // Reserve the slot before waiting, so a concurrent caller queues behind this one.
    this.#nextFreeMs = Math.max(this.#nextFreeMs, now) + this.#intervalMs
    if (waitMs > 0) await this.#sleep(waitMs)
  }
}
