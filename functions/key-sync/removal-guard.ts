import { createHash } from 'node:crypto'
import type { StaleItem } from '#keys/key-mirror-writer.ts'
import type { HeldRemoval } from '#keys/key-sync-state-repository.ts'

/**
 * The mirror is only as good as the last read of API Gateway, so one bad read must not empty it,
 * nor take a customer's keys away: a removal that looks like a bad read or a console slip is held
 * until runs spanning five minutes agree on exactly the same keys, or an operator confirms them
 * by id; the keys of a lost plan wait for the operator however long that takes. Held, per group
 * of keys:
 * - the whole mirror: more than half of a mirror of at least ten keys;
 * - a plan that is no longer a valid plan of the stage (tags lost or mistyped, detached, deleted,
 *   or missing from a read) while it has keys, whatever their number: never applied by
 *   agreement, only by confirmation. Holding them is safe: API Gateway itself refuses a key on
 *   no usage plan of the stage (methods require an API key, key source AUTHORIZER; see
 *   docs/reliability.md), so a held key of a plan that really left the stage still gets 403;
 *   a plan whose tags were mistyped keeps working until someone looks;
 * - all keys of a plan that has two or more, or more than half of a plan that has four or more.
 * Revoking a customer's single key, or a few keys of a plan, goes through at once.
 */
export const MASS_REMOVAL = {
  minMirrorSize: 10,
  maxShare: 0.5,
  agreementMs: 5 * 60_000,
  /** A plan of this many keys or more is held when all of them go. */
  minPlanEmptied: 2,
  /** A plan of this many keys or more is held when more than maxShare of them go. */
  minPlanMajority: 4,
} as const

/** The group id of a whole-mirror removal (other groups are usage plan ids). */
export const WHOLE_MIRROR = '*'

export type HoldCause = 'mirror' | 'plan-lost' | 'plan-emptied' | 'plan-majority'

export interface RemovalInput {
  /** Keys in the mirror before the run, in all and by plan. */
  mirrorSize: number
  planSizes: ReadonlyMap<string, number>
  /** What the run would remove. */
  staleItems: readonly StaleItem[]
  /** Plans valid on the stage now: a mirrored key of another plan has lost its plan. */
  validPlans: ReadonlySet<string>
  /** Groups this run could judge (a run that read only some plans keeps the others' holds). */
  judged: (group: string) => boolean
  /** What earlier runs withheld, by group. */
  held: Readonly<Record<string, HeldRemoval>>
  nowMs: number
  /** Key ids an operator confirmed: a held group goes when every key of it is named. */
  confirmedKeyIds?: ReadonlySet<string>
  /**
   * Key ids API Gateway says are deleted (the key listing lacks them and GetApiKey finds
   * nothing). Their removals are never held, whatever their number: a deleted key cannot be
   * brought back, so holding its mirror item only keeps a revoked key working (several keys
   * revoked at once looked like a console slip and were held).
   */
  deletedKeyIds?: ReadonlySet<string>
}

export interface GroupDecision {
  group: string
  cause: HoldCause
  keyIds: string[]
  outcome: 'held' | 'agreed' | 'confirmed'
  firstSeenAt: number
}

export interface RemovalDecision {
  /** Hashes to delete now. */
  remove: string[]
  /** Hashes withheld. */
  withheld: number
  /** Plans with mirrored keys that are no longer valid plans of the stage. */
  lostPlans: string[]
  /** Every guarded group and what became of it. */
  groups: GroupDecision[]
  /** What the next run inherits. */
  held: Record<string, HeldRemoval>
}

/** Identifies the exact set of hashes, so only runs that agree on every key count together. */
export const removalDigest = (stale: readonly string[]): string =>
  createHash('sha256')
    .update([...stale].sort().join('\n'))
    .digest('hex')
    .slice(0, 32)

export const isMassRemoval = (mirrorSize: number, removals: number): boolean =>
  mirrorSize >= MASS_REMOVAL.minMirrorSize && removals > mirrorSize * MASS_REMOVAL.maxShare

const causeOf = (
  planId: string,
  planSize: number,
  removals: number,
  validPlans: ReadonlySet<string>,
): HoldCause | undefined => {
  if (!validPlans.has(planId)) return 'plan-lost'
  if (planSize >= MASS_REMOVAL.minPlanEmptied && removals >= planSize) return 'plan-emptied'
  if (planSize >= MASS_REMOVAL.minPlanMajority && removals > planSize * MASS_REMOVAL.maxShare) {
    return 'plan-majority'
  }
  return undefined
}

/** Which of this run's removals go ahead, and what to hold. */
export const decideRemovals = (input: RemovalInput): RemovalDecision => {
  const { held, nowMs, confirmedKeyIds, deletedKeyIds } = input
  const deleted = input.staleItems.filter((item) => deletedKeyIds?.has(item.keyId))
  const staleItems = input.staleItems.filter((item) => !deletedKeyIds?.has(item.keyId))
  const lostPlans = [...input.planSizes.keys()].filter((id) => !input.validPlans.has(id)).sort()
  const byGroup = new Map<string, { cause: HoldCause | undefined; items: StaleItem[] }>()
  // Lost plans' keys are their own groups, whatever else the run removes: they wait for an
  // operator, where a whole-mirror removal may be applied by agreement.
  const lost = staleItems.filter((item) => !input.validPlans.has(item.usagePlanId))
  const rest = staleItems.filter((item) => input.validPlans.has(item.usagePlanId))
  for (const item of lost) {
    const group = byGroup.get(item.usagePlanId) ?? { cause: 'plan-lost', items: [] }
    group.items.push(item)
    byGroup.set(item.usagePlanId, group)
  }
  if (isMassRemoval(input.mirrorSize, rest.length)) {
    byGroup.set(WHOLE_MIRROR, { cause: 'mirror', items: rest })
  } else {
    for (const item of rest) {
      const group = byGroup.get(item.usagePlanId) ?? { cause: undefined, items: [] }
      group.items.push(item)
      byGroup.set(item.usagePlanId, group)
    }
    for (const [planId, group] of byGroup) {
      if (group.cause === 'plan-lost') continue
      group.cause = causeOf(
        planId,
        input.planSizes.get(planId) ?? group.items.length,
        group.items.length,
        input.validPlans,
      )
    }
  }

  const remove: string[] = deleted.map(({ keyHash }) => keyHash)
  const groups: GroupDecision[] = []
  const nextHeld: Record<string, HeldRemoval> = {}
  let withheld = 0
  for (const [group, { cause, items }] of byGroup) {
    const hashes = items.map(({ keyHash }) => keyHash)
    if (!cause) {
      remove.push(...hashes)
      continue
    }
    const keyIds = items.map(({ keyId }) => keyId).sort()
    const digest = removalDigest(hashes)
    const before = held[group]?.digest === digest ? held[group] : undefined
    const firstSeenAt = before?.firstSeenAt ?? nowMs
    const outcome = keyIds.every((id) => confirmedKeyIds?.has(id))
      ? 'confirmed'
      : before && cause !== 'plan-lost' && nowMs - before.firstSeenAt >= MASS_REMOVAL.agreementMs
        ? 'agreed'
        : 'held'
    groups.push({ group, cause, keyIds, outcome, firstSeenAt })
    if (outcome === 'held') {
      withheld += hashes.length
      // A new removal, or a different one: the five minutes start again.
      nextHeld[group] = { digest, count: hashes.length, firstSeenAt, cause, keyIds }
    } else remove.push(...hashes)
  }
  // Holds of plans this run did not read stand until a run reads them.
  for (const [group, hold] of Object.entries(held)) {
    if (!byGroup.has(group) && !input.judged(group)) nextHeld[group] = hold
  }
  return { remove: remove.sort(), withheld, lostPlans, groups, held: nextHeld }
}
