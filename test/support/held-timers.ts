import type { Timers } from '#shared/time/clock.ts'

/**
 * Timers that never fire. A test that moves the local server's clock passes them, so no sync run
 * starts on a real timer while it moves time: the test starts every run itself (syncKeys).
 */
export const heldTimers = (): Timers => ({
  setTimeout: () => Symbol('held timer'),
  clearTimeout: () => undefined,
})
