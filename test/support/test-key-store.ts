import { StageKeyStore } from '#functions/authorizer/stage-key-store.ts'
import type { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { StoreKeyReader } from '#shared/data/store-key-reader.ts'

/** The MAC secrets tests make project keys with (version 1; version 2 for rotation tests). */
export const TEST_MAC_SECRETS: ReadonlyMap<number, string> = new Map([
  [1, 'test-mac-secret-version-1-0123456789abcdef'],
])

/** The pool usage-plan key of a test stage. */
export const TEST_POOL_KEY = 'test-pool-usage-key-0123456789abcdefABCD'

/**
 * The authorizer's StageKeyStore over a test's key mirror (and store key table, when the test has
 * one: else every store key is unknown), with the test MAC secrets and pool key.
 */
export const testKeyStore = ({
  mirror,
  storeKeys = { get: async () => undefined },
  clock = Date.now,
}: {
  mirror: Pick<KeyMirrorReader, 'get'>
  storeKeys?: Pick<StoreKeyReader, 'get'>
  clock?: () => number
}): StageKeyStore =>
  new StageKeyStore({
    mirror,
    storeKeys,
    macSecrets: TEST_MAC_SECRETS,
    poolKey: TEST_POOL_KEY,
    clock,
  })
