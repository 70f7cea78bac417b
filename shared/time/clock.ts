/** Milliseconds since the epoch. Injected everywhere time matters so tests can move it. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()

/**
 * The timers something schedules its own work with. Injected beside a Clock where that work reads
 * the clock: a test that moves the clock fires them itself, so no run races the time it moves.
 */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}
