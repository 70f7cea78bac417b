import { describe, expect, it } from 'vitest'
import { decideRemovals, MASS_REMOVAL, removalDigest } from '#functions/key-sync/removal-guard.ts'

const hashes = (count: number, prefix = 'a') =>
  Array.from({ length: count }, (_, n) => `${prefix}${String(n).padStart(63, '0')}`)
const T0 = Date.parse('2027-03-05T10:00:00Z')
const MINUTE = 60_000

describe('removal guard', () => {
  it('lets a removal of up to half of the mirror through at once', () => {
    expect(
      decideRemovals({ mirrorSize: 10, stale: hashes(5), held: undefined, nowMs: T0 }),
    ).toEqual({ remove: true, reason: 'normal' })
  })

  it('lets any removal through while the mirror has fewer than ten keys', () => {
    expect(decideRemovals({ mirrorSize: 9, stale: hashes(9), held: undefined, nowMs: T0 })).toEqual(
      { remove: true, reason: 'normal' },
    )
  })

  it('holds a removal of more than half of a mirror of ten or more, naming it', () => {
    const stale = hashes(6)
    expect(decideRemovals({ mirrorSize: 10, stale, held: undefined, nowMs: T0 })).toEqual({
      remove: false,
      held: { digest: removalDigest(stale), count: 6, firstSeenAt: T0 },
    })
  })

  it('applies a held removal once runs spanning five minutes agree on every key', () => {
    const stale = hashes(11)
    const first = decideRemovals({ mirrorSize: 11, stale, held: undefined, nowMs: T0 })
    if (first.remove) throw new Error('expected a hold')
    for (let minute = 1; minute < 5; minute += 1) {
      expect(
        decideRemovals({ mirrorSize: 11, stale, held: first.held, nowMs: T0 + minute * MINUTE }),
      ).toEqual({ remove: false, held: first.held })
    }
    expect(
      decideRemovals({
        mirrorSize: 11,
        stale,
        held: first.held,
        nowMs: T0 + MASS_REMOVAL.agreementMs,
      }),
    ).toEqual({ remove: true, reason: 'agreed' })
  })

  it('starts the five minutes again when a run would remove a different set', () => {
    const first = decideRemovals({ mirrorSize: 11, stale: hashes(11), held: undefined, nowMs: T0 })
    if (first.remove) throw new Error('expected a hold')
    const other = hashes(10)
    const later = T0 + 10 * MINUTE
    expect(
      decideRemovals({ mirrorSize: 11, stale: other, held: first.held, nowMs: later }),
    ).toEqual({
      remove: false,
      held: { digest: removalDigest(other), count: 10, firstSeenAt: later },
    })
  })

  it('applies at once what an operator confirms by its count, and nothing else', () => {
    const stale = hashes(11)
    expect(
      decideRemovals({ mirrorSize: 11, stale, held: undefined, nowMs: T0, confirmedCount: 11 }),
    ).toEqual({ remove: true, reason: 'confirmed' })
    expect(
      decideRemovals({ mirrorSize: 11, stale, held: undefined, nowMs: T0, confirmedCount: 10 }),
    ).toMatchObject({ remove: false })
  })
})
