import type { Clock } from '#shared/time/clock.ts'

/**
 * Brute force and floods, locally: an address whose failed authentications in one minute exceed
 * the limit is refused (429 `too_many_failed_auths`, Retry-After until its minute ends). The
 * gateway keeps two of these, as the WAF counts them apart on AWS (docs/operations.md, "Edge
 * rules"): requests without a well-formed key, refused at once past the limit, and wrong keys,
 * past which the address is answered from the authorizer cache alone (a key proven within the
 * TTL works, a new value costs no authorizer run or key-mirror read). So a keyless flood (an
 * `<img>` tag on a web page, a neighbour behind the same NAT) never refuses a customer's key,
 * and preflights are never counted at all. 429 at once, not a slower 401; but a client that keeps
 * sending past TARPIT_AFTER_REFUSALS refusals in its window has each connection it sends on read
 * again only TARPIT_MS after its 429 (the gateway pauses the socket): answering a flood costs the
 * server a socket write per request, which a flood from one address would otherwise take from
 * every other client (bench/local-flood-bench.ts).
 */
export const FAILED_AUTH_LIMIT = 30
export const FAILED_AUTH_WINDOW_MS = 60_000
/** Refusals an address gets at full speed in its window before its connections are slowed. */
export const TARPIT_AFTER_REFUSALS = 300
/** How long a slowed connection waits before its next request is read. */
export const TARPIT_MS = 1_000
/** Addresses remembered at most; past it the oldest windows go first. */
const FAILED_AUTH_ADDRESSES = 10_000

export class FailedAuthLimiter {
  readonly #limit: number
  readonly #clock: Clock
  readonly #maxAddresses: number
  /** In order of each window's start (a restarted window moves to the end). */
  readonly #windows = new Map<string, { startedAt: number; failures: number; refused: number }>()

  constructor({
    limit = FAILED_AUTH_LIMIT,
    clock,
    maxAddresses = FAILED_AUTH_ADDRESSES,
  }: {
    limit?: number
    clock: Clock
    maxAddresses?: number
  }) {
    this.#limit = limit
    this.#clock = clock
    this.#maxAddresses = maxAddresses
  }

  record(address: string): void {
    const now = this.#clock()
    const window = this.#windows.get(address)
    if (window && now - window.startedAt < FAILED_AUTH_WINDOW_MS) {
      window.failures += 1
      return
    }
    this.#windows.delete(address)
    // Bounded: the oldest windows go first, so many addresses failing once cannot wipe out the
    // window of one that is refused right now (it would only go after maxAddresses newer ones).
    for (const [oldest] of this.#windows) {
      if (this.#windows.size < this.#maxAddresses) break
      this.#windows.delete(oldest)
    }
    this.#windows.set(address, { startedAt: now, failures: 1, refused: 0 })
  }

  /** Counts one 429 the address got in its window; returns how many it got so far. */
  noteRefused(address: string): number {
    const window = this.#windows.get(address)
    if (!window) return 0
    window.refused += 1
    return window.refused
  }

  /** Seconds until the address may try again, or undefined when it is not refused. */
  retryAfterSeconds(address: string): number | undefined {
    const window = this.#windows.get(address)
    if (!window || window.failures <= this.#limit) return undefined
    const left = window.startedAt + FAILED_AUTH_WINDOW_MS - this.#clock()
    return left > 0 ? left / 1000 : undefined
  }
}
