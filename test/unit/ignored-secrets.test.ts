import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CONTROL_SECRET_FILE, DEFAULT_DATA_DIR } from '#keys/local-control-config.ts'
import { CONTROL_PLANE_FILE } from '#local/control-plane/control-plane-store.ts'
import { SECOND_DATA_DIR } from '#local/data-dir-lock.ts'
import { CURSOR_SECRET_FILE } from '#local/local-environment.ts'

const ROOT = new URL('../../', import.meta.url).pathname

/** Whether git ignores a path of the checkout (`git check-ignore` exits 0 for an ignored one). */
const ignored = (path: string): boolean =>
  spawnSync('git', ['check-ignore', '--quiet', '--no-index', path], { cwd: ROOT }).status === 0

describe('files that hold keys or secrets', () => {
  it.each([DEFAULT_DATA_DIR, SECOND_DATA_DIR])(
    'are ignored by git in %s, where npm start and its messages put them',
    (dataDir) => {
      for (const file of [CONTROL_PLANE_FILE, CONTROL_SECRET_FILE, CURSOR_SECRET_FILE]) {
        expect(ignored(join(dataDir, file)), join(dataDir, file)).toBe(true)
      }
    },
  )

  it('a path nobody ignores is not reported ignored (the check can fail)', () => {
    expect(ignored('README.md')).toBe(false)
  })
})
