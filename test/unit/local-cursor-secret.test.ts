import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CURSOR_SECRET_FILE, localCursorSecret } from '#local/local-environment.ts'

/** The local stage's cursor secret: kept per data directory, whole or not at all. */
let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'petstore-cursor-secret-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('local cursor secret', () => {
  it('is generated once and kept for the next start on the same data directory', async () => {
    const first = await localCursorSecret(dir)
    expect(first).toMatch(/^[0-9a-f]{64}$/)
    expect(await localCursorSecret(dir)).toBe(first)
    // Owner-only, and nothing left beside it.
    expect((await stat(join(dir, CURSOR_SECRET_FILE))).mode & 0o777).toBe(0o600)
    expect(await readdir(dir)).toEqual([CURSOR_SECRET_FILE])
  })

  it('is fresh for every process with :memory:', async () => {
    expect(await localCursorSecret(':memory:')).not.toBe(await localCursorSecret(':memory:'))
  })

  it('is the same for servers starting on one directory at once', async () => {
    const secrets = await Promise.all(Array.from({ length: 8 }, () => localCursorSecret(dir)))
    expect(new Set(secrets).size).toBe(1)
  })

  it.each([
    ['empty (a first start killed mid-write)', ''],
    ['cut short', 'abc123\n'],
  ])('replaces a file that is %s with a whole key', async (_, content) => {
    await writeFile(join(dir, CURSOR_SECRET_FILE), content)
    const secret = await localCursorSecret(dir)
    expect(secret).toMatch(/^[0-9a-f]{64}$/)
    expect(await localCursorSecret(dir)).toBe(secret)
  })
})
