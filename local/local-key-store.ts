import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { isWellFormedApiKey } from '#shared/auth/bearer-token.ts'
import { type ApiKeyRecord, type KeyStore, keyFingerprint } from '#shared/auth/key-store.ts'
import {
  isPlanName,
  limitsFor,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
} from '#shared/config/plans-config.ts'
import { locateJsonError } from './json-error-locator.ts'
import { API_KEY_FORMAT, LocalConfigError } from './local-config.ts'

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

/**
 * A key file that cannot be used. The message names the file and where it goes wrong (line and
 * column, or entry number and field), never what it holds: any part of it may be a key.
 */
export class LocalKeyFileError extends LocalConfigError {
  override name = 'LocalKeyFileError'
}

const checkedEntry = (entry: unknown, index: number, path: string): LocalKeyEntry => {
  const invalid = (what: string) => new LocalKeyFileError(`${path}: entry ${index + 1} ${what}`)
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw invalid('is not an object')
  }
  const { key, plan, createdAt, revokedAt } = entry as Record<string, unknown>
  if (typeof key !== 'string' || !isWellFormedApiKey(key)) {
    throw invalid(`has no valid "key" (${API_KEY_FORMAT})`)
  }
  if (typeof plan !== 'string' || !isPlanName(plan)) {
    throw invalid(`has no valid "plan" (one of ${PLAN_NAMES.join(', ')})`)
  }
  if (typeof createdAt !== 'string') throw invalid('has no "createdAt" string')
  if (revokedAt !== undefined && typeof revokedAt !== 'string') {
    throw invalid('has a "revokedAt" that is not a string')
  }
  return { key, plan, createdAt, ...(revokedAt === undefined ? {} : { revokedAt }) }
}

/** The entries of a key file's text, all of them valid, or a LocalKeyFileError. */
export const parseKeyFile = (text: string, path: string): LocalKeyEntry[] => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // JSON.parse's own message may quote the text around the error, a key included.
    const where = locateJsonError(text)
    throw new LocalKeyFileError(
      where
        ? `${path} is not valid JSON: ${where.problem} at line ${where.line}, column ${where.column}`
        : `${path} is not valid JSON`,
    )
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys)) {
    throw new LocalKeyFileError(`${path} must hold a JSON object with a "keys" list`)
  }
  return keys.map((entry, index) => checkedEntry(entry, index, path))
}

/** Reads the key file; a missing file is an empty list, an unusable one a LocalKeyFileError. */
export const readKeyFile = async (path: string): Promise<LocalKeyEntry[]> => {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return []
    throw new LocalKeyFileError(`${path} cannot be read (${code ?? 'unknown error'})`)
  }
  return parseKeyFile(text, path)
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
  /** The key file's entries as read at start: the last good keys until it changes. */
  fileKeys?: LocalKeyEntry[]
  enterpriseLimits: PlanLimits
  /** Keys that live only in this process (':memory:' mode). */
  memoryKeys?: LocalKeyEntry[]
}

const stampOf = (file: string): Promise<string> =>
  stat(file).then(
    (info) => `${info.mtimeMs}:${info.size}`,
    () => 'missing',
  )

/** The local implementation of the authorizer's KeyStore port. */
export class LocalKeyStore implements KeyStore {
  readonly #options: LocalKeyStoreOptions
  #fileKeys: LocalKeyEntry[]
  #fileStamp = ''
  /** The read of a changed file in progress, shared by the lookups that wait for it. */
  #reading: { stamp: string; keys: Promise<LocalKeyEntry[]> } | undefined

  constructor(options: LocalKeyStoreOptions) {
    this.#options = options
    this.#fileKeys = options.fileKeys ?? []
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
    const stamp = await stampOf(keyFile)
    if (stamp === this.#fileStamp) return this.#fileKeys
    if (this.#reading?.stamp !== stamp) {
      const keys = this.#read(keyFile, stamp).finally(() => {
        if (this.#reading?.keys === keys) this.#reading = undefined
      })
      this.#reading = { stamp, keys }
    }
    return this.#reading.keys
  }

  async #read(keyFile: string, stamp: string): Promise<LocalKeyEntry[]> {
    try {
      this.#fileKeys = stamp === 'missing' ? [] : await readKeyFile(keyFile)
    } catch (error) {
      if (!(error instanceof LocalKeyFileError)) throw error
      // A file saved half-edited must not lock everyone out (or answer 500): the last good keys
      // stay, and the operator is told once, as this version of the file is not read again.
      process.stderr.write(
        `petstore: ${error.message}; the server keeps the keys it read from it before\n`,
      )
    }
    this.#fileStamp = stamp
    return this.#fileKeys
  }
}
