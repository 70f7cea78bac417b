import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import type { Clock } from '#shared/time/clock.ts'
import { secretDigest } from './secret-digest.ts'

/**
 * What the gateway keeps of an authorizer answer: whether its policy allows, the principal and
 * context the functions get, and the usageIdentifierKey it meters, as a digest only.
 */
export interface Authorization {
  allowed: boolean
  principalId: string
  context: APIGatewayAuthorizerResult['context']
  usageKeyDigest: string | undefined
}

/** An authorizer answer, or 'denied' for its "Unauthorized" error (API Gateway's 401). */
export type CachedAuthorization = Authorization | 'denied'

export const toAuthorization = (result: APIGatewayAuthorizerResult): Authorization => ({
  allowed: result.policyDocument.Statement.some((statement) => statement.Effect === 'Allow'),
  principalId: result.principalId,
  context: result.context,
  usageKeyDigest: result.usageIdentifierKey ? secretDigest(result.usageIdentifierKey) : undefined,
})

/**
 * API Gateway's authorizer result cache: for a TOKEN authorizer the cache key is the identity
 * source (the Authorization header), and an answer is reused for the TTL (AWS docs, "Configure a
 * Lambda authorizer": default 300 s, at most 3600 s, 0 turns caching off). Both allows and
 * denials are cached, so a key revoked or created meanwhile shows only after the TTL. Entries are
 * keyed by a SHA-256 of the header and hold no key in clear; clear() is the stage's cache flush.
 * Expired entries are swept at most
 * once per TTL, so a stream of distinct tokens cannot grow the map without bound.
 *
 * Requests with the same header that miss the cache together share one authorizer call
 * (`answer`). On AWS each of them may invoke the authorizer, each in an instance of its own; here
 * they would all run in the one process beside the functions they wait for, and under load the
 * last of 100 such calls outlived the authorizer's 5 s timeout: API Gateway's 500 for a valid key.
 */
export class AuthorizerCache {
  readonly #ttlMs: number
  readonly #clock: Clock
  readonly #entries = new Map<string, { answer: CachedAuthorization; expiresAtMs: number }>()
  /** Authorizer calls under way, by header digest; a flush forgets them (their answers too). */
  #inFlight = new Map<string, Promise<CachedAuthorization>>()
  #nextSweepAtMs = 0

  constructor({ ttlSeconds, clock }: { ttlSeconds: number; clock: Clock }) {
    this.#ttlMs = ttlSeconds * 1000
    this.#clock = clock
  }

  get(header: string): CachedAuthorization | undefined {
    if (this.#ttlMs === 0) return undefined
    const entry = this.#entries.get(secretDigest(header))
    return entry && this.#clock() < entry.expiresAtMs ? entry.answer : undefined
  }

  put(header: string, answer: CachedAuthorization): void {
    if (this.#ttlMs === 0) return
    const now = this.#clock()
    if (now >= this.#nextSweepAtMs) {
      for (const [id, entry] of this.#entries)
        if (now >= entry.expiresAtMs) this.#entries.delete(id)
      this.#nextSweepAtMs = now + this.#ttlMs
    }
    this.#entries.set(secretDigest(header), { answer, expiresAtMs: now + this.#ttlMs })
  }

  /**
   * The cached answer, or the one `invoke` gives, cached; callers that miss while a call for the
   * same header is under way wait for that call. A rejection (the authorizer failed) is cached
   * for no one. With caching off every caller invokes.
   */
  async answer(
    header: string,
    invoke: () => Promise<CachedAuthorization>,
  ): Promise<CachedAuthorization> {
    const cached = this.get(header)
    if (cached !== undefined) return cached
    if (this.#ttlMs === 0) return invoke()
    const id = secretDigest(header)
    const pending = this.#inFlight.get(id)
    if (pending) return pending
    const inFlight = this.#inFlight
    const call = invoke().then((answer) => {
      // Not after a flush that came meanwhile: the answer may predate the change it announced.
      if (this.#inFlight === inFlight) this.put(header, answer)
      return answer
    })
    inFlight.set(id, call)
    return call.finally(() => inFlight.delete(id))
  }

  /**
   * Drops every answer, as FlushStageAuthorizersCache does on AWS: the key sync flushes after a
   * change to the keys, so a new or revoked key takes effect with no TTL on top.
   */
  clear(): void {
    this.#entries.clear()
    this.#inFlight = new Map()
  }

  /** Entries held, expired or not (tests check the sweep). */
  get size(): number {
    return this.#entries.size
  }
}
