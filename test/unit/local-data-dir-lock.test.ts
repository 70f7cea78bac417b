import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  DataDirInUseError,
  LOCK_FILE,
  lockDataDir,
  processStartTime,
} from '#local/data-dir-lock.ts'

/**
 * `server.lock`: one server per data directory. Two servers stand in for two processes here by
 * the pid each claims to be: this test's process and its parent, both alive.
 */
let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'petstore-lock-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** The pid of a process that has exited. */
const deadPid = (): number => {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'])
  return Number(child.stdout.toString())
}

const writeLock = (record: object) => writeFile(join(dir, LOCK_FILE), JSON.stringify(record))

describe('the data directory lock', () => {
  it('stops a second server while the first runs, naming it', async () => {
    const first = await lockDataDir(dir, { pid: process.pid })
    await first.announce('http://127.0.0.1:3000/v1')
    await expect(lockDataDir(dir, { pid: process.ppid })).rejects.toThrow(
      /in use by the server at http:\/\/127\.0\.0\.1:3000\/v1/,
    )
    await first.release()
    await (await lockDataDir(dir, { pid: process.ppid })).release()
  })

  it('lets exactly one of two servers take over a stale lock, every time', async () => {
    const dead = deadPid()
    for (let trial = 0; trial < 100; trial += 1) {
      await writeLock({ pid: dead })
      const outcomes = await Promise.allSettled([
        lockDataDir(dir, { pid: process.pid }),
        lockDataDir(dir, { pid: process.ppid }),
      ])
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled')
      expect(won, `trial ${trial}`).toHaveLength(1)
      const lost = outcomes.find((outcome) => outcome.status === 'rejected')
      expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(DataDirInUseError)
      await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release()
    }
  })

  it('takes over a lock naming a live process that did not write it (a pid reused after a restart)', async () => {
    // Where a process's start time can be read (Linux): what the rest of this test relies on.
    expect(await processStartTime(process.ppid)).toMatch(/^\d+$/)
    // The parent is alive, but it started at another time than the lock says.
    await writeLock({ pid: process.ppid, started: '1' })
    const lock = await lockDataDir(dir, { pid: process.pid })
    const record = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8'))
    expect(record).toEqual({ pid: process.pid, started: await processStartTime(process.pid) })
    await lock.release()
    // A lock naming this very pid, from an earlier life (another start time).
    await writeLock({ pid: process.pid, started: '2' })
    await (await lockDataDir(dir, { pid: process.pid })).release()
    // The parent's own lock, start time and all, still holds.
    await writeLock({ pid: process.ppid, started: await processStartTime(process.ppid) })
    await expect(lockDataDir(dir, { pid: process.pid })).rejects.toBeInstanceOf(DataDirInUseError)
  })
})
