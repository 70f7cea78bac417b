import { PLAN_NAMES, type PlanLimits, type PlanName } from '#shared/config/plans-config.ts'
import { IN_MEMORY } from './embedded-dynamo.ts'
import {
  generateApiKey,
  keyFilePath,
  type LocalKeyEntry,
  LocalKeyStore,
  readKeyFile,
  writeKeyFile,
} from './local-key-store.ts'

export interface LocalKeys {
  store: LocalKeyStore
  /** The key file in the data directory; undefined in ':memory:' mode. */
  keyFile: string | undefined
  /** Keys created by this start (one per plan), to be printed once. */
  created: LocalKeyEntry[]
  /** Unrevoked keys that were already in the key file. */
  activeFileKeys: LocalKeyEntry[]
}

export interface LocalKeySources {
  dataDir: string
  apiKeys: { plan: PlanName; key: string }[]
  enterpriseLimits: PlanLimits
}

/**
 * Keys to accept; creates one per plan when none exist anywhere (docs/local-server.md). A key
 * file that cannot be used throws LocalKeyFileError: the server does not start on it.
 */
export const bootstrapLocalKeys = async ({
  dataDir,
  apiKeys,
  enterpriseLimits,
}: LocalKeySources): Promise<LocalKeys> => {
  const keyFile = dataDir === IN_MEMORY ? undefined : keyFilePath(dataDir)
  const fileKeys = keyFile ? await readKeyFile(keyFile) : []
  const activeFileKeys = fileKeys.filter((entry) => entry.revokedAt === undefined)
  let created: LocalKeyEntry[] = []
  if (apiKeys.length === 0 && activeFileKeys.length === 0) {
    const createdAt = new Date().toISOString()
    created = PLAN_NAMES.map((plan) => ({ plan, key: generateApiKey(plan), createdAt }))
    if (keyFile) await writeKeyFile(keyFile, [...fileKeys, ...created])
  }
  const store = new LocalKeyStore({
    envKeys: apiKeys,
    keyFile,
    enterpriseLimits,
    ...(keyFile ? { fileKeys: [...fileKeys, ...created] } : { memoryKeys: created }),
  })
  return { store, keyFile, created, activeFileKeys }
}
