import type { ApiKeyRecord, KeyStore } from '#shared/auth/key-store.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'

export interface KeyMirrorStoreOptions {
  mirror: Pick<KeyMirrorRepository, 'get'>
}

/**
 * The authorizer's KeyStore on AWS: one GetItem on the stage's key mirror (kept by the key-sync
 * function), nothing else, so the request path never touches the API Gateway management API.
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
    const item = await this.#mirror.get(hashApiKey(key))
    if (!item?.enabled) return undefined
    return {
      id: item.keyId,
      plan: item.plan,
      limits: { perMinute: item.perMinute, perDay: item.perDay },
    }
  }
}
