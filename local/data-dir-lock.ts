import { readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'

/**
 * One server per data directory. Its embedded DynamoDB (LevelDB) admits one process; a second
 * `npm start` on the same directory used to start anyway and fail every request with dynalite's
 * "Database is closed". The first server writes `server.lock` (its pid and when that process
 * started, then its address); a second one reads it and stops with a message naming the first.
 *
 * A lock whose process is gone (a killed server) is taken over, by one server only: taking over
 * needs `server.lock.takeover`, created exclusively, and the stale lock is checked again under
 * it, so two servers that found the same stale lock cannot both remove it and both start. A lock
 * naming a live process that is not its writer is stale too: the process's start time (Linux
 * `/proc/<pid>/stat`) differs from the one recorded, as after a container restart that handed
 * the same pid to another process, or to this very server. Where the start time cannot be read,
 * a live pid holds.
 */
export const LOCK_FILE = 'server.lock'
const TAKEOVER_FILE = `${LOCK_FILE}.takeover`

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError'
}

interface LockRecord {
  pid: number
  /** The process's start time, in clock ticks since boot (Linux); absent elsewhere. */
  started?: string
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

/** Field 22 of `/proc/<pid>/stat` (starttime), or undefined where there is no /proc. */
export const processStartTime = async (pid: number): Promise<string | undefined> => {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
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

/** Whether the process that wrote `record` still runs: its pid lives and started when it says. */
const heldBy = async (record: LockRecord | undefined): Promise<boolean> => {
  if (!record || !alive(record.pid)) return false
  if (record.started === undefined) return true
  const started = await processStartTime(record.pid)
  return started === undefined || started === record.started
}

const isExists = (error: unknown) => (error as NodeJS.ErrnoException).code === 'EEXIST'

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

export interface LockOptions {
  /** This server's process (tests stand in for two processes in one). */
  pid?: number
}

export const lockDataDir = async (
  dataDir: string,
  { pid = process.pid }: LockOptions = {},
): Promise<DataDirLock> => {
  const file = join(dataDir, LOCK_FILE)
  const takeover = join(dataDir, TAKEOVER_FILE)
  const own: LockRecord = { pid, ...(await startedOf(pid)) }
  const write = (path: string, record: LockRecord, flag: 'wx' | 'w') =>
    writeFile(path, `${JSON.stringify(record)}\n`, { flag, mode: 0o600 })
  const inUse = (holder: LockRecord | undefined) =>
    new DataDirInUseError(
      `the data directory ${resolve(dataDir)} is in use by ${holder?.url ? `the server at ${holder.url}` : 'a server starting'}${holder ? ` (pid ${holder.pid})` : ''}. Use that server, stop it first, or start this one on other data: PETSTORE_DATA_DIR=${SECOND_DATA_DIR} PORT=3001 npm start`,
    )
  const claim = async (): Promise<boolean> => {
    try {
      await write(file, own, 'wx')
      return true
    } catch (error) {
      if (!isExists(error)) throw error
      return false
    }
  }

  if (!(await claim())) {
    const holder = await readLock(file)
    if (await heldBy(holder)) throw inUse(holder)
    // Stale: take it over, one server at a time.
    await claimTakeover(takeover, own, write, () => inUse(undefined))
    try {
      // Under the takeover lock: still the stale lock (or none), never one written since.
      const now = await readLock(file)
      if (await heldBy(now)) throw inUse(now)
      await rm(file, { force: true })
      if (!(await claim())) throw inUse(await readLock(file))
    } finally {
      await rm(takeover, { force: true })
    }
  }
  return {
    announce: (url) => write(file, { ...own, url }, 'w'),
    release: () => rm(file, { force: true }),
  }
}

/**
 * Creates the takeover file, or fails with `busy()` while another live server holds it. One left
 * by a server that died taking over is removed and tried once more.
 */
const claimTakeover = async (
  takeover: string,
  own: LockRecord,
  write: (path: string, record: LockRecord, flag: 'wx') => Promise<void>,
  busy: () => Error,
): Promise<void> => {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await write(takeover, own, 'wx')
    } catch (error) {
      if (!isExists(error)) throw error
      if (attempt > 0 || (await takeoverHeld(takeover))) throw busy()
      await rm(takeover, { force: true })
    }
  }
}

/** A takeover file still being written (no record yet) counts as held for a few seconds. */
const TAKEOVER_WRITE_MS = 5_000

const takeoverHeld = async (takeover: string): Promise<boolean> => {
  const record = await readLock(takeover)
  if (record) return heldBy(record)
  const written = await stat(takeover).catch(() => undefined)
  return written !== undefined && Date.now() - written.mtimeMs < TAKEOVER_WRITE_MS
}

const startedOf = async (pid: number): Promise<Pick<LockRecord, 'started'>> => {
  const started = await processStartTime(pid)
  return started === undefined ? {} : { started }
}
