import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isWellFormedApiKey } from '#shared/auth/bearer-token.ts'
import { isPlanName, PLAN_NAMES, type PlanName } from '#shared/config/plans-config.ts'
import { parseJsonFile } from './json-error-locator.ts'
import { API_KEY_FORMAT, LocalConfigError } from './local-config-error.ts'

/**
 * The key file of earlier versions (`<PETSTORE_DATA_DIR>/api-keys.json`), read once at start so
 * its keys move into the local control plane (control-plane-bootstrap.ts). A file that cannot be
 * used stops the start, as it always did.
 */

/** One key in the key file. */
export interface LocalKeyEntry {
  key: string
  plan: PlanName
  createdAt: string
  revokedAt?: string
}

export const keyFilePath = (dataDir: string): string => join(dataDir, 'api-keys.json')

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
  const parsed = parseJsonFile(text, path, (message) => new LocalKeyFileError(message))
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
