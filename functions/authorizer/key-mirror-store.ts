import type { ApiKeyRecord, KeyStore } from '#shared/auth/key-store.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'

export interface KeyMirrorStoreOptions {
  mirror: Pick<KeyMirrorRepository, 'get'>
}

/**
 * The authorizer's KeyStore on AWS: one strongly consistent GetItem on the stage's key mirror
 * (kept by the key-sync function), nothing else, so the request path never touches the API
 * Gateway management API.
 * The mirror belongs to one stage, so the request's scope needs no check here.
 *
 * Only an enabled item is a valid key; the repository has already dropped items whose plan or
 * limits are invalid. A DynamoDB failure throws: API Gateway answers 500, and the authorizer never
 * calls a possibly valid key invalid.
 */
export class KeyMirrorStore implements KeyStore {
  readonly #mirror: Pick<KeyMirrorRepository, 'get'>

  constructor({ mirror }: KeyMirrorStoreOptions) {
    this.#mirror = mirror
  }

  async lookup(key: string): Promise<ApiKeyRecord | undefined> {
    // Strongly consistent: the key sync flushes the authorizer cache right after it deletes a
    // revoked key's item, and an eventually consistent read may still return that item for a
    // moment (AWS docs, "DynamoDB read consistency":
    // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html).
    // The allow it produced would be cached again for the whole TTL (300 s in production). A
    // consistent read reflects every acknowledged write, so the first request after the flush
    // is refused; it costs one read unit instead of half (docs/performance.md).
    const item = await this.#mirror.get(hashApiKey(key), { consistent: true })
    if (!item?.enabled) return undefined
    return {
      id: item.keyId,
      plan: item.plan,
      limits: { perMinute: item.perMinute, perDay: item.perDay },
    }
  }
}
