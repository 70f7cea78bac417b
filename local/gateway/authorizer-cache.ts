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
 */
export class AuthorizerCache {
  readonly #ttlMs: number
  readonly #clock: Clock
  readonly #entries = new Map<string, { answer: CachedAuthorization; expiresAtMs: number }>()
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
   * Drops every answer, as FlushStageAuthorizersCache does on AWS: the key sync flushes after a
   * change to the keys, so a new or revoked key takes effect with no TTL on top.
   */
  clear(): void {
    this.#entries.clear()
  }

  /** Entries held, expired or not (tests check the sweep). */
  get size(): number {
    return this.#entries.size
  }
}
