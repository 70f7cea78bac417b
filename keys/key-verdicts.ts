import type { ApiKey, UsagePlan } from '@aws-sdk/client-api-gateway'
import { type PlanLimits, type PlanName, planFromTags } from '#shared/config/plans-config.ts'
import { hashApiKey, type KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'

/*
 * What the key sync makes of a read of API Gateway: a verdict per plan (from its tags), the key
 * listing with hashes in place of values, and the mirror entries (api-gateway-key-source.ts reads).
 */

/**
 * An API key's tag: the instant (ISO 8601) from which the key counts as disabled, so a rotated
 * key's overlap ends by itself, within a sync, with no one left to call UpdateApiKey. A value
 * that is not an instant counts as past: a typo never keeps a key alive longer than meant.
 */
export const DISABLE_AFTER_TAG = 'petstore:disableAfter'

/** Whether a key's disable-after tag, if any, has passed. */
export const isPastDisableAfter = (
  tags: Record<string, string | undefined> | undefined,
  nowMs: number,
): boolean => {
  const value = tags?.[DISABLE_AFTER_TAG]
  if (value === undefined) return false
  const at = Date.parse(value)
  return !Number.isFinite(at) || at <= nowMs
}

/** A key of the listing as the sync needs it: never its value, only the value's hash. */
export interface ListedKey {
  keyId: string
  /** Whether it may be mirrored: enabled, not past its disable-after tag, with a value. */
  usable: boolean
  keyHash: string | undefined
}

/** What a valid plan grants its keys. */
export interface PlanGrant {
  plan: PlanName
  limits: PlanLimits
}

/** A working key's mirror entry: the grant of the plan it is on. */
export const mirrorEntry = (
  keyHash: string,
  keyId: string,
  usagePlanId: string,
  { plan, limits }: PlanGrant,
): KeyMirrorEntry => ({
  keyHash,
  keyId,
  enabled: true,
  plan,
  perMinute: limits.perMinute,
  perDay: limits.perDay,
  usagePlanId,
})

export type PlanVerdict =
  | { usagePlanId: string; plan: PlanName; limits: PlanLimits }
  | { usagePlanId: string; refused: true }

/**
 * The plans to read, in order: those named first, then the rotation from after the cursor to the
 * last plan (a rotation that reaches the end is done; the next one starts from the first).
 */
export const readingOrder = (
  planIds: readonly string[],
  first: ReadonlySet<string>,
  cursor: string | undefined,
): string[] => {
  const rest = planIds.filter((id) => !first.has(id))
  const after = cursor === undefined ? -1 : rest.findIndex((id) => id > cursor)
  return [...planIds.filter((id) => first.has(id)), ...rest.slice(after < 0 ? 0 : after)]
}

/** Each stage plan's verdict from its tags, and the plans refused (their keys get 401). */
export const planVerdicts = (stagePlans: readonly (UsagePlan & { id: string })[]) => {
  const verdicts = new Map<string, PlanVerdict>()
  const refusedPlans: { usagePlanId: string; reason: string }[] = []
  for (const plan of stagePlans) {
    const tagged = planFromTags(plan.tags)
    if ('error' in tagged) {
      verdicts.set(plan.id, { usagePlanId: plan.id, refused: true })
      refusedPlans.push({ usagePlanId: plan.id, reason: tagged.error })
    } else verdicts.set(plan.id, { usagePlanId: plan.id, ...tagged })
  }
  return { verdicts, refusedPlans }
}

/** The key listing as the sync keeps it: whether each key may be mirrored, and its value's hash. */
export const listedKeys = (keysById: ReadonlyMap<string, ApiKey>, nowMs: number) => {
  const listed = new Map<string, ListedKey>()
  for (const key of keysById.values()) {
    const usable =
      key.enabled === true && !isPastDisableAfter(key.tags, nowMs) && Boolean(key.value)
    listed.set(key.id as string, {
      keyId: key.id as string,
      usable,
      keyHash: key.value ? hashApiKey(key.value) : undefined,
    })
  }
  return listed
}

/** The mirror entries of the keys read: one per usable key on a valid plan, by key id. */
export const mirrorEntries = (
  verdictOfKey: ReadonlyMap<string, PlanVerdict>,
  listed: ReadonlyMap<string, ListedKey>,
) => {
  const entries: KeyMirrorEntry[] = []
  const seenHashes = new Set<string>()
  const refusedKeyIds: string[] = []
  let disabledKeys = 0
  for (const [keyId, verdict] of [...verdictOfKey].sort(([a], [b]) => a.localeCompare(b))) {
    if ('refused' in verdict) {
      refusedKeyIds.push(keyId)
      continue
    }
    const key = listed.get(keyId)
    if (!key?.usable || key.keyHash === undefined) {
      disabledKeys += 1
      continue
    }
    // Values are unique in API Gateway; if not, the first key id keeps the hash.
    if (seenHashes.has(key.keyHash)) continue
    seenHashes.add(key.keyHash)
    entries.push(mirrorEntry(key.keyHash, keyId, verdict.usagePlanId, verdict))
  }
  return { entries, refusedKeyIds, disabledKeys }
}
