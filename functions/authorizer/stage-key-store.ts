import { timingSafeEqual } from 'node:crypto'
import type { KeyContext } from '#shared/auth/key-context.ts'
import { type KeyStore, keyFingerprint } from '#shared/auth/key-store.ts'
import { type KeyRoute, keyRoute, type MacSecrets } from '#shared/auth/project-key.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import type { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import { storeKeyWorks } from '#shared/data/store-key-item.ts'
import type { StoreKeyReader } from '#shared/data/store-key-reader.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import type { Clock } from '#shared/time/clock.ts'

export interface StageKeyStoreOptions {
  mirror: Pick<KeyMirrorReader, 'get'>
  storeKeys: Pick<StoreKeyReader, 'get'>
  /** The stage's MAC secrets by version (KEY_MAC_SECRETS). */
  macSecrets: MacSecrets
  /** The pool usage-plan key: a secret that meters store keys, never a bearer key itself. */
  poolKey: string
  clock: Clock
  /** Where a refusal is logged, with its reason and the key's fingerprint (never the key). */
  logger?: Pick<AppLogger, 'info'>
}

/** Why a key was refused, for the log (never the key). */
export type Refusal = 'forged' | 'pool-key' | 'unknown' | 'disabled'

const sameSecret = (a: string, b: string): boolean => {
  const left = Buffer.from(a, 'utf8')
  const right = Buffer.from(b, 'utf8')
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * The authorizer's KeyStore, at most one read per key, in the table the key itself names:
 * 1. a value shaped as a project key (shared/auth/project-key.ts) whose MAC does not verify, and
 *    the pool key, are refused before any read: a forgery costs a hash and an HMAC, nothing more;
 * 2. a store key (`pks…`): one strongly consistent GetItem of its id in the store key table, its
 *    hash compared in constant time;
 * 3. any other key (the keys CLI's API Gateway keys `pkg…`, and console keys, which have no MAC):
 *    one strongly consistent GetItem on the stage's key mirror, kept by the key sync.
 * Strongly consistent: the key sync and the keys CLI flush the authorizer cache right after they
 * delete or disable a key, and an eventually consistent read may still return that item for a
 * moment (AWS docs, "DynamoDB read consistency"); the allow it produced would be cached again for
 * the whole TTL. A DynamoDB failure throws: API Gateway answers 500, and the authorizer never
 * calls a possibly valid key invalid.
 */
export class StageKeyStore implements KeyStore {
  readonly #options: StageKeyStoreOptions

  constructor(options: StageKeyStoreOptions) {
    this.#options = options
  }

  /** Where a key is read, or undefined for a forgery or the pool key (no read). */
  route(key: string): KeyRoute | undefined {
    if (sameSecret(key, this.#options.poolKey)) return undefined
    return keyRoute(key, this.#options.macSecrets)
  }

  /** The key API Gateway meters a key under: the pool key for a store key, else the key itself. */
  usageKeyOf(key: string): string {
    return this.route(key)?.kind === 'store' ? this.#options.poolKey : key
  }

  async lookup(key: string): Promise<KeyContext | undefined> {
    const refuse = (reason: Refusal) => {
      this.#options.logger?.info('Rejected API key', {
        reason,
        keyFingerprint: keyFingerprint(key),
      })
      return undefined
    }
    if (sameSecret(key, this.#options.poolKey)) return refuse('pool-key')
    const route = keyRoute(key, this.#options.macSecrets)
    if (!route) return refuse('forged')
    if (route.kind === 'store') {
      const item = await this.#options.storeKeys.get(route.keyId, { consistent: true })
      if (!item || !sameSecret(item.keyHash, hashApiKey(key))) return refuse('unknown')
      if (!storeKeyWorks(item, this.#options.clock())) return refuse('disabled')
      return {
        keyId: item.keyId,
        plan: item.plan,
        limits: { perMinute: item.perMinute, perDay: item.perDay },
      }
    }
    const item = await this.#options.mirror.get(hashApiKey(key), { consistent: true })
    if (!item?.enabled) return refuse('unknown')
    return {
      keyId: item.keyId,
      plan: item.plan,
      limits: { perMinute: item.perMinute, perDay: item.perDay },
    }
  }
}
