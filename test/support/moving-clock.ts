import { vi } from 'vitest'

/**
 * Resolves with `command` while moving vitest's faked `Date` on, half a second at a time: what a
 * command that waits for the clock (`keys lift`) sees pass while it waits, where the test holds
 * the clock still.
 */
export const whileTheClockRuns = async <T>(command: Promise<T>): Promise<T> => {
  let settled = false
  const done = command.finally(() => {
    settled = true
  })
  while (!settled) {
    vi.setSystemTime(Date.now() + 500)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return done
}
