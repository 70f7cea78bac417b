import { describe, expect, it } from 'vitest'
import {
  minuteLabel,
  secondsUntil,
  unixSecondsCeil,
  utcWindowsAt,
} from '#shared/rate-limit/rate-limit-windows.ts'

const at = (iso: string) => Date.parse(iso)

describe('UTC windows', () => {
  it('puts an instant in its UTC minute and UTC day', () => {
    const windows = utcWindowsAt(at('2026-03-14T05:17:42.250Z'))
    expect(windows).toStrictEqual({
      dayId: '2026-03-14',
      dayStartMs: at('2026-03-14T00:00:00Z'),
      dayEndMs: at('2026-03-15T00:00:00Z'),
      minuteOfDay: 5 * 60 + 17,
      minuteStartMs: at('2026-03-14T05:17:00Z'),
      minuteEndMs: at('2026-03-14T05:18:00Z'),
    })
  })

  it('keeps 23:59:59.999 in the old day and starts the new day at 00:00:00.000', () => {
    const last = utcWindowsAt(at('2026-03-14T23:59:59.999Z'))
    const first = utcWindowsAt(at('2026-03-15T00:00:00.000Z'))
    expect(last.dayId).toBe('2026-03-14')
    expect(last.minuteOfDay).toBe(1439)
    expect(last.minuteEndMs).toBe(at('2026-03-15T00:00:00Z'))
    expect(last.dayEndMs).toBe(first.dayStartMs)
    expect(first.dayId).toBe('2026-03-15')
    expect(first.minuteOfDay).toBe(0)
    expect(first.minuteStartMs).toBe(first.dayStartMs)
  })

  it.each([
    ['month end', '2026-04-30T23:59:30Z', '2026-04-30', '2026-05-01'],
    ['year end', '2026-12-31T23:59:59.999Z', '2026-12-31', '2027-01-01'],
    ['leap day eve', '2028-02-28T23:59:59Z', '2028-02-28', '2028-02-29'],
    ['leap day end', '2028-02-29T23:59:59Z', '2028-02-29', '2028-03-01'],
    ['non-leap February end', '2027-02-28T23:59:59Z', '2027-02-28', '2027-03-01'],
  ])('rolls the day over at the %s', (_name, instant, today, tomorrow) => {
    const windows = utcWindowsAt(at(instant))
    expect(windows.dayId).toBe(today)
    expect(windows.dayEndMs).toBe(at(`${tomorrow}T00:00:00Z`))
    expect(utcWindowsAt(windows.dayEndMs).dayId).toBe(tomorrow)
    expect(windows.dayEndMs - windows.dayStartMs).toBe(86_400_000)
  })

  it('starts a new minute exactly on the minute', () => {
    const before = utcWindowsAt(at('2026-03-14T05:17:59.999Z'))
    const after = utcWindowsAt(at('2026-03-14T05:18:00.000Z'))
    expect(before.minuteOfDay + 1).toBe(after.minuteOfDay)
    expect(before.minuteEndMs).toBe(after.minuteStartMs)
  })

  it('labels minutes of the day as hhmm', () => {
    expect(minuteLabel(0)).toBe('0000')
    expect(minuteLabel(317)).toBe('0517')
    expect(minuteLabel(1439)).toBe('2359')
  })

  it('rounds waits and reset instants up to whole seconds, never below zero', () => {
    const now = at('2026-03-14T05:17:42.250Z')
    expect(secondsUntil(at('2026-03-14T05:18:00Z'), now)).toBe(18)
    expect(secondsUntil(at('2026-03-15T00:00:00Z'), at('2026-03-14T23:59:59.999Z'))).toBe(1)
    expect(secondsUntil(now, now)).toBe(0)
    expect(secondsUntil(now - 5_000, now)).toBe(0)
    expect(unixSecondsCeil(at('2026-03-14T05:18:00Z'))).toBe(at('2026-03-14T05:18:00Z') / 1000)
    expect(unixSecondsCeil(at('2026-03-14T05:18:00.001Z'))).toBe(at('2026-03-14T05:18:01Z') / 1000)
  })
})
