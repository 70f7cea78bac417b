import { describe, expect, it } from 'vitest'
import {
  decideRemovals,
  MASS_REMOVAL,
  type RemovalInput,
  removalDigest,
  WHOLE_MIRROR,
} from '#functions/key-sync/removal-guard.ts'
import type { StaleItem } from '#keys/key-mirror-writer.ts'

const T0 = Date.parse('2027-03-05T10:00:00Z')
const MINUTE = 60_000

/** `count` mirrored keys of a plan, as stale items. */
const keysOf = (planId: string, count: number, from = 0): StaleItem[] =>
  Array.from({ length: count }, (_, n) => ({
    keyHash: `${planId}-${String(n + from).padStart(4, '0')}`.padEnd(64, '0'),
    keyId: `${planId}-k${n + from}`,
    usagePlanId: planId,
  }))

/** Four standard plans and ten one-key customer plans: no plan is half of the mirror. */
const PLAN_SIZES = new Map([
  ['free', 20],
  ['pro', 11],
  ['business', 3],
  ['enterprise', 1],
  ...Array.from({ length: 10 }, (_, n) => [`cust${n}`, 1] as [string, number]),
])
const VALID = new Set(PLAN_SIZES.keys())
const MIRROR = [...PLAN_SIZES.values()].reduce((a, b) => a + b, 0)

const decide = (staleItems: StaleItem[], extra: Partial<RemovalInput> = {}) =>
  decideRemovals({
    mirrorSize: MIRROR,
    planSizes: PLAN_SIZES,
    staleItems,
    validPlans: VALID,
    judged: () => true,
    held: {},
    nowMs: T0,
    ...extra,
  })

describe('removal guard', () => {
  it("lets a revocation through at once: a customer's single key, or a few keys of a plan", () => {
    const stale = [...keysOf('cust3', 1), ...keysOf('pro', 2)]
    const decision = decide(stale)
    expect(decision.remove).toEqual(stale.map(({ keyHash }) => keyHash).sort())
    expect(decision).toMatchObject({ withheld: 0, groups: [], held: {} })
  })

  it('never holds keys API Gateway says are deleted, however many: three revoked at once go', () => {
    const revoked = keysOf('business', 3)
    expect(decide(revoked)).toMatchObject({ withheld: 3 })
    const decision = decide(revoked, { deletedKeyIds: new Set(revoked.map(({ keyId }) => keyId)) })
    expect(decision.remove).toEqual(revoked.map(({ keyHash }) => keyHash).sort())
    expect(decision).toMatchObject({ withheld: 0, groups: [], held: {} })
  })

  it('holds every key of a plan that is no longer valid on the stage, whatever the count', () => {
    // Pro lost its tag (or its stage): 11 of 46 keys, far from half of the mirror.
    const valid = new Set([...VALID].filter((id) => id !== 'pro' && id !== 'cust1'))
    const decision = decide([...keysOf('pro', 11), ...keysOf('cust1', 1)], { validPlans: valid })
    expect(decision.remove).toEqual([])
    expect(decision.withheld).toBe(12)
    expect(decision.lostPlans).toEqual(['cust1', 'pro'])
    expect(decision.groups.map(({ group, cause }) => [group, cause])).toEqual([
      ['pro', 'plan-lost'],
      ['cust1', 'plan-lost'],
    ])
    expect(decision.held.pro).toEqual({
      digest: removalDigest(keysOf('pro', 11).map(({ keyHash }) => keyHash)),
      count: 11,
      firstSeenAt: T0,
      cause: 'plan-lost',
      keyIds: keysOf('pro', 11)
        .map(({ keyId }) => keyId)
        .sort(),
    })
    // However long runs agree, a lost plan's keys wait for an operator.
    const later = decide([...keysOf('pro', 11), ...keysOf('cust1', 1)], {
      validPlans: valid,
      held: decision.held,
      nowMs: T0 + 24 * 3_600_000,
    })
    expect(later).toMatchObject({ remove: [], withheld: 12 })
    expect(later.held.pro?.firstSeenAt).toBe(T0)
  })

  it('holds all keys of a plan of two or more, and most of a plan of four or more', () => {
    const decision = decide([...keysOf('business', 3), ...keysOf('pro', 6), ...keysOf('free', 3)])
    expect(decision.groups.map(({ group, cause }) => [group, cause])).toEqual([
      ['business', 'plan-emptied'],
      ['pro', 'plan-majority'],
    ])
    // Free loses 3 of 20: that goes through.
    expect(decision.remove).toEqual(keysOf('free', 3).map(({ keyHash }) => keyHash))
  })

  it('holds a removal of more than half of a mirror of ten or more as one group', () => {
    const stale = [...keysOf('free', 20), ...keysOf('pro', 5)]
    const decision = decide(stale)
    expect(decision.groups).toEqual([
      expect.objectContaining({ group: WHOLE_MIRROR, cause: 'mirror', outcome: 'held' }),
    ])
    expect(decision.remove).toEqual([])
  })

  it('applies a held group once runs spanning five minutes agree on every key', () => {
    const stale = keysOf('business', 3)
    let held = decide(stale).held
    for (let minute = 1; minute < 5; minute += 1) {
      const decision = decide(stale, { held, nowMs: T0 + minute * MINUTE })
      expect(decision.remove, `minute ${minute}`).toEqual([])
      held = decision.held
    }
    const agreed = decide(stale, { held, nowMs: T0 + MASS_REMOVAL.agreementMs })
    expect(agreed.remove).toHaveLength(3)
    expect(agreed.groups[0]?.outcome).toBe('agreed')
    expect(agreed.held).toEqual({})
  })

  it('starts the five minutes again when the held keys differ', () => {
    const { held } = decide(keysOf('pro', 11))
    const other = decide(keysOf('pro', 10), { held, nowMs: T0 + MASS_REMOVAL.agreementMs })
    expect(other.remove).toEqual([])
    expect(other.held.pro?.firstSeenAt).toBe(T0 + MASS_REMOVAL.agreementMs)
  })

  it('applies a held group an operator confirmed by naming every one of its keys, and no other', () => {
    const stale = [...keysOf('business', 3), ...keysOf('pro', 11)]
    const named = new Set([...keysOf('business', 3), ...keysOf('pro', 10)].map((k) => k.keyId))
    const decision = decide(stale, { confirmedKeyIds: named })
    // Business is named whole; Pro lacks one key: it stays held.
    expect(decision.groups.map(({ group, outcome }) => [group, outcome])).toEqual([
      ['business', 'confirmed'],
      ['pro', 'held'],
    ])
    expect(decision.remove).toEqual(keysOf('business', 3).map(({ keyHash }) => keyHash))
  })

  it('keeps the hold of a plan a run did not read, and drops one it read and found whole', () => {
    const { held } = decide(keysOf('pro', 11))
    expect(decide([], { held, judged: (group) => group !== 'pro' }).held).toEqual(held)
    expect(decide([], { held }).held).toEqual({})
  })
})
