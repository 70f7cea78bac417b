import { randomBytes } from 'node:crypto'
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises'

// The local server's secrets kept in its data directory (the control plane's, the cursors').

/** What a kept secret's file holds: 32 random bytes as hex. */
const SECRET_PATTERN = /^[0-9a-f]{64}$/

const readSecret = async (file: string): Promise<string | undefined> => {
  try {
    const text = (await readFile(file, 'utf8')).trim()
    // Empty or cut short (a first start killed mid-write): not a secret to use.
    return SECRET_PATTERN.test(text) ? text : undefined
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * A secret of the data directory: random on first start and kept in `file` (owner-only). The
 * file appears whole or not at all (written aside, then linked into place), so a kill mid-write
 * never leaves an empty or short secret; a file that is not a whole secret anyway is replaced.
 */
export const keptSecret = async (file: string): Promise<string> => {
  const kept = await readSecret(file)
  if (kept) return kept
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
  await writeFile(aside, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
  try {
    // link fails if the file exists: of two servers starting on one directory, the first wins.
    await link(aside, file).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error
      if ((await readSecret(file)) === undefined) await rename(aside, file)
    })
  } finally {
    await rm(aside, { force: true })
  }
  const secret = await readSecret(file)
  if (!secret) throw new Error(`${file} does not hold a secret`)
  return secret
}
