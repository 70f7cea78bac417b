import type { HeldRemoval } from '#keys/key-sync-state-repository.ts'
import { shownArgument } from '#keys/key-value-mask.ts'
import { KeyAdminError } from './key-admin-error.ts'

/**
 * Removals the key sync holds (a plan that lost its tags or its stage waits for an operator
 * however long; see docs/operations.md#key-sync-guard), as `keys held` lists them and
 * `keys confirm <key id>...` applies them.
 */
export interface HeldRemovals {
  /** Held removals by group (a usage plan id, or `*` for the whole mirror). */
  held(): Promise<Record<string, HeldRemoval>>
  /** A sync run that applies the held removals every one of whose keys `keyIds` names. */
  confirm(keyIds: readonly string[]): Promise<{ deleted: number; heldRemovals: number }>
}

const MAX_SHOWN_IDS = 20

/** `keys held`: one paragraph per held group, with the command that confirms it. */
export const listHeldRemovals = async (
  removals: HeldRemovals,
  keysCommand: string,
  say: (line: string) => void,
  print: (line: string) => void,
): Promise<void> => {
  const groups = Object.entries(await removals.held())
  if (groups.length === 0) {
    say('the key sync holds no removal')
    return
  }
  for (const [group, hold] of groups.sort(([a], [b]) => a.localeCompare(b))) {
    const ids = hold.keyIds ?? []
    print(
      `${group === '*' ? 'whole mirror' : `usage plan ${group}`}: ${hold.count} key(s) held since ${new Date(hold.firstSeenAt).toISOString()} (${hold.cause ?? 'unknown cause'})`,
    )
    print(`  ${ids.slice(0, MAX_SHOWN_IDS).join(' ')}${ids.length > MAX_SHOWN_IDS ? ' …' : ''}`)
    if (ids.length > 0) print(`  confirm: ${keysCommand} confirm ${group}`)
  }
}

/**
 * `keys confirm <plan id | key id>...`: a plan id (or `*`) stands for every key its held removal
 * lists. The sync removes a held group only when every one of its keys is named. A name the sync
 * does not hold (a typo, a group already gone) fails the whole command before anything is
 * removed: a confirmation that removes nothing must not look like one that did.
 */
export const confirmHeldRemovals = async (
  removals: HeldRemovals,
  names: readonly string[],
  { say, keysCommand }: { say: (line: string) => void; keysCommand: string },
): Promise<number> => {
  const held = await removals.held()
  const heldKeys = new Set(Object.values(held).flatMap((hold) => hold.keyIds ?? []))
  const unknown = names.filter((name) => held[name] === undefined && !heldKeys.has(name))
  if (unknown.length > 0) {
    throw new KeyAdminError(
      `the key sync holds no removal of ${unknown.map(shownArgument).join(', ')}: nothing was removed (${keysCommand} held lists what it holds)`,
    )
  }
  const keyIds = names.flatMap((name) => held[name]?.keyIds ?? [name])
  const result = await removals.confirm([...new Set(keyIds)])
  say(
    `the key sync removed ${result.deleted} key(s)${result.heldRemovals > 0 ? `; it still holds ${result.heldRemovals} (a held group goes only when all its keys are named: see keys held)` : ''}`,
  )
  return result.deleted
}
