import type { Clock } from '#shared/time/clock.ts'

/** A clock stopped at one instant. */
export const fixedClock =
  (epochMs: number): Clock =>
  () =>
    epochMs
