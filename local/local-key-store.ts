import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { type ApiKeyRecord, type KeyStore, keyFingerprint } from '#shared/auth/key-store.ts'
import {
  isPlanName,
  limitsFor,
  type PlanLimits,
  type PlanName,
} from '#shared/config/plans-config.ts'

/** One key in the local key file. Local keys are development secrets kept in the data dir. */
export interface LocalKeyEntry {
  key: string
  plan: PlanName
  createdAt: string
  revokedAt?: string
}

export const keyFilePath = (dataDir: string): string => join(dataDir, 'api-keys.json')

export const generateApiKey = (plan: PlanName): string =>
  `${plan}-${randomBytes(18).toString('base64url')}`

/** Reads the key file; a missing file is an empty list. */
export const readKeyFile = async (path: string): Promise<LocalKeyEntry[]> => {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  const parsed = JSON.parse(text) as { keys?: unknown }
  if (!Array.isArray(parsed.keys)) throw new Error(`${path} is not a key file`)
  return parsed.keys.filter(
    (entry): entry is LocalKeyEntry =>
      typeof entry?.key === 'string' && typeof entry?.plan === 'string' && isPlanName(entry.plan),
  )
}

/** Writes atomically (temp file + rename) so the server never reads half a file; owner-only. */
export const writeKeyFile = async (path: string, keys: LocalKeyEntry[]): Promise<void> => {
  await mkdir(dirname(path), { recursive: true })
  const temp = `${path}.${process.pid}.tmp`
  await writeFile(temp, `${JSON.stringify({ keys }, null, 2)}\n`, { mode: 0o600 })
  await rename(temp, path)
}

export interface LocalKeyStoreOptions {
  /** Keys from PETSTORE_API_KEYS. */
  envKeys: { plan: PlanName; key: string }[]
  /** The key file, re-read whenever it changes (so `npm run keys` works on a running server). */
  keyFile: string | undefined
  enterpriseLimits: PlanLimits
  /** Keys that live only in this process (':memory:' mode). */
  memoryKeys?: LocalKeyEntry[]
}

/** The local implementation of the authorizer's KeyStore port. */
export class LocalKeyStore implements KeyStore {
  readonly #options: LocalKeyStoreOptions
  #fileKeys: LocalKeyEntry[] = []
  #fileStamp = ''

  constructor(options: LocalKeyStoreOptions) {
    this.#options = options
  }

  async lookup(key: string): Promise<ApiKeyRecord | undefined> {
    const fromEnv = this.#options.envKeys.find((entry) => entry.key === key)
    const entry =
      fromEnv ??
      [...(this.#options.memoryKeys ?? []), ...(await this.#currentFileKeys())].find(
        (candidate) => candidate.key === key && candidate.revokedAt === undefined,
      )
    if (!entry) return undefined
    return {
      id: keyFingerprint(key),
      plan: entry.plan,
      limits: limitsFor(entry.plan, this.#options.enterpriseLimits),
    }
  }

  async #currentFileKeys(): Promise<LocalKeyEntry[]> {
    const { keyFile } = this.#options
    if (!keyFile) return []
    const stamp = await stat(keyFile).then(
      (info) => `${info.mtimeMs}:${info.size}`,
      () => 'missing',
    )
    if (stamp !== this.#fileStamp) {
      this.#fileKeys = stamp === 'missing' ? [] : await readKeyFile(keyFile)
      this.#fileStamp = stamp
    }
    return this.#fileKeys
  }
}
