import { readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'

/**
 * One server per data directory. Its embedded DynamoDB (LevelDB) admits one process; a second
 * `npm start` on the same directory used to start anyway and fail every request with dynalite's
 * "Database is closed". The first server writes `server.lock` (its pid, then its address); a
 * second one reads it and stops with a message naming the first. A lock whose process is gone (a
 * killed server) is taken over.
 */
export const LOCK_FILE = 'server.lock'

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError'
}

interface LockRecord {
  pid: number
  url?: string
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const readLock = async (file: string): Promise<LockRecord | undefined> => {
  try {
    const record = JSON.parse(await readFile(file, 'utf8')) as LockRecord
    return Number.isInteger(record.pid) ? record : undefined
  } catch {
    return undefined
  }
}

export interface DataDirLock {
  /** Records the address the server listens at, for the message a second server prints. */
  announce(url: string): Promise<void>
  release(): Promise<void>
}

/**
 * The data directory the message suggests for a second server. It will hold keys and the control
 * plane's secret: `.gitignore` covers it, as test/unit/ignored-secrets.test.ts checks.
 */
export const SECOND_DATA_DIR = '.petstore-2'

export const lockDataDir = async (dataDir: string): Promise<DataDirLock> => {
  const file = join(dataDir, LOCK_FILE)
  const write = (record: LockRecord, flag: 'wx' | 'w') =>
    writeFile(file, `${JSON.stringify(record)}\n`, { flag, mode: 0o600 })
  for (let attempt = 0; ; attempt += 1) {
    try {
      await write({ pid: process.pid }, 'wx')
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error
      const holder = await readLock(file)
      if (holder && alive(holder.pid)) {
        throw new DataDirInUseError(
          `the data directory ${resolve(dataDir)} is in use by ${holder.url ? `the server at ${holder.url}` : 'a server starting'} (pid ${holder.pid}). Use that server, stop it first, or start this one on other data: PETSTORE_DATA_DIR=${SECOND_DATA_DIR} PORT=3001 npm start`,
        )
      }
      // Left by a server that is gone: take it over.
      await rm(file, { force: true })
    }
  }
  return {
    announce: (url) => write({ pid: process.pid, url }, 'w'),
    release: () => rm(file, { force: true }),
  }
}
