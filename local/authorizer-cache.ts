import { createHash } from 'node:crypto'
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import type { Clock } from '#shared/time/clock.ts'

/**
 * API Gateway's authorizer result cache: for a TOKEN authorizer the cache key is the identity
 * source (the Authorization header), and an answer is reused for the TTL (AWS docs: default
 * 300 s, at most 3600 s, 0 turns caching off). Both allows and denials are cached, so a key
 * revoked or created meanwhile shows only after the TTL. Entries are keyed by a SHA-256 of the
 * header: the key itself is not kept.
 */
export type CachedAuthorization = APIGatewayAuthorizerResult | 'denied'

export class AuthorizerCache {
  readonly #ttlMs: number
  readonly #clock: Clock
  readonly #entries = new Map<string, { answer: CachedAuthorization; expiresAtMs: number }>()

  constructor({ ttlSeconds, clock }: { ttlSeconds: number; clock: Clock }) {
    this.#ttlMs = ttlSeconds * 1000
    this.#clock = clock
  }

  get(header: string): CachedAuthorization | undefined {
    if (this.#ttlMs === 0) return undefined
    const id = hashOf(header)
    const entry = this.#entries.get(id)
    if (!entry) return undefined
    if (this.#clock() < entry.expiresAtMs) return entry.answer
    this.#entries.delete(id)
    return undefined
  }

  put(header: string, answer: CachedAuthorization): void {
    if (this.#ttlMs === 0) return
    this.#entries.set(hashOf(header), { answer, expiresAtMs: this.#clock() + this.#ttlMs })
  }
}

const hashOf = (header: string): string => createHash('sha256').update(header).digest('hex')
