/**
 * Window arithmetic of the plan rate limits (docs/rate-limits-and-keys.md): two fixed windows,
 * the UTC minute and the UTC day. Unix time has no leap seconds, so every UTC day is exactly
 * 86,400,000 ms and both windows are plain integer divisions of the epoch milliseconds.
 */
export const SECOND_MS = 1_000
export const MINUTE_MS = 60 * SECOND_MS
export const DAY_MS = 24 * 60 * MINUTE_MS

/** How long a key stays suspended after too many rejected requests in one minute. */
export const SUSPENSION_MS = 15 * MINUTE_MS

/** The limit, what is left of it, and when it resets, for one window of one key. */
export interface WindowState {
  limit: number
  remaining: number
  resetAtMs: number
}

/** The UTC minute and UTC day an instant falls in. */
export interface UtcWindows {
  /** `yyyy-mm-dd` of the UTC day. */
  dayId: string
  dayStartMs: number
  dayEndMs: number
  /** 0 (00:00) to 1439 (23:59). */
  minuteOfDay: number
  minuteStartMs: number
  minuteEndMs: number
}

const floorTo = (epochMs: number, unitMs: number): number => Math.floor(epochMs / unitMs) * unitMs

/** The last day's id: formatting a date costs more than all the rest of a request's windows. */
let lastDay = { startMs: Number.NaN, id: '' }
const dayIdOf = (dayStartMs: number): string => {
  if (lastDay.startMs !== dayStartMs)
    lastDay = { startMs: dayStartMs, id: new Date(dayStartMs).toISOString().slice(0, 10) }
  return lastDay.id
}

export const utcWindowsAt = (nowMs: number): UtcWindows => {
  const dayStartMs = floorTo(nowMs, DAY_MS)
  const minuteStartMs = floorTo(nowMs, MINUTE_MS)
  return {
    dayId: dayIdOf(dayStartMs),
    dayStartMs,
    dayEndMs: dayStartMs + DAY_MS,
    minuteOfDay: (minuteStartMs - dayStartMs) / MINUTE_MS,
    minuteStartMs,
    minuteEndMs: minuteStartMs + MINUTE_MS,
  }
}

/** `hhmm` of a minute of the day, e.g. 317 → `0517`. */
export const minuteLabel = (minuteOfDay: number): string => {
  const hours = Math.floor(minuteOfDay / 60)
  const minutes = minuteOfDay % 60
  return `${String(hours).padStart(2, '0')}${String(minutes).padStart(2, '0')}`
}

/** Whole seconds from now until an instant, rounded up (a client waiting that long is safe). */
export const secondsUntil = (instantMs: number, nowMs: number): number =>
  Math.max(0, Math.ceil((instantMs - nowMs) / SECOND_MS))

/** Unix seconds of an instant, rounded up (never earlier than the instant itself). */
export const unixSecondsCeil = (instantMs: number): number => Math.ceil(instantMs / SECOND_MS)
