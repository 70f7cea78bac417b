import { createHash } from 'node:crypto'
import type { HeldRemoval } from '#shared/data/key-sync-state-repository.ts'

/**
 * The mirror is only as good as the last read of API Gateway, so one bad read must not empty it:
 * a run that would remove more than half of a mirror of at least ten keys removes nothing until
 * runs spanning five minutes agree on exactly the same removal, or an operator confirms it.
 */
export const MASS_REMOVAL = {
  minMirrorSize: 10,
  maxShare: 0.5,
  agreementMs: 5 * 60_000,
} as const

export interface RemovalInput {
  /** Keys in the mirror before the run. */
  mirrorSize: number
  /** Hashes the run would remove, sorted. */
  stale: readonly string[]
  /** What earlier runs withheld, if anything. */
  held: HeldRemoval | undefined
  nowMs: number
  /** An operator's confirmation: the number of keys the held removal names. */
  confirmedCount?: number
}

export type RemovalDecision =
  | { remove: true; reason: 'none' | 'normal' | 'agreed' | 'confirmed' }
  | { remove: false; held: HeldRemoval }

/** Identifies the exact set of hashes, so only runs that agree on every key count together. */
export const removalDigest = (stale: readonly string[]): string =>
  createHash('sha256').update(stale.join('\n')).digest('hex').slice(0, 32)

export const isMassRemoval = (mirrorSize: number, removals: number): boolean =>
  mirrorSize >= MASS_REMOVAL.minMirrorSize && removals > mirrorSize * MASS_REMOVAL.maxShare

/** Whether this run may remove its stale keys, and what to hold otherwise. */
export const decideRemovals = ({
  mirrorSize,
  stale,
  held,
  nowMs,
  confirmedCount,
}: RemovalInput): RemovalDecision => {
  if (stale.length === 0) return { remove: true, reason: 'none' }
  if (!isMassRemoval(mirrorSize, stale.length)) return { remove: true, reason: 'normal' }
  if (confirmedCount === stale.length) return { remove: true, reason: 'confirmed' }
  const digest = removalDigest(stale)
  if (held?.digest === digest) {
    return nowMs - held.firstSeenAt >= MASS_REMOVAL.agreementMs
      ? { remove: true, reason: 'agreed' }
      : { remove: false, held }
  }
  // A new removal, or a different one: the five minutes start again.
  return { remove: false, held: { digest, count: stale.length, firstSeenAt: nowMs } }
}
