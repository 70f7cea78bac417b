/**
 * What a key sync run answers: the Lambda returns it, the keys CLI reads it from the invoke's
 * payload (ops/keys/stage-sync-client.ts) and the local control plane from its in-process run.
 */
export type SkipReason = 'other-stage' | 'lease-held' | 'stack-delete'

export interface KeySyncResult {
  /** Why nothing ran: another stage's change, a run in progress (it reads what this one named). */
  skipped: SkipReason | false
  /** Entries of the plans read (every valid key, after a read of every plan). */
  upserted: number
  /** Items written because they were new or changed. */
  written: number
  deleted: number
  /** Removals the guard withheld (see removal-guard.ts). */
  heldRemovals: number
  /** Whether the stage's authorizer cache was flushed after this run. */
  cacheFlushed: boolean
  refusedPlans: number
  refusedKeys: number
  managementCalls: number
  /** Stage plans whose keys were read, and whether that was every plan of the stage. */
  plansRead: number
  complete: boolean
}

/** The counts of a run that did nothing. */
export const NOTHING_DONE: Omit<KeySyncResult, 'skipped'> = {
  upserted: 0,
  written: 0,
  deleted: 0,
  heldRemovals: 0,
  cacheFlushed: false,
  refusedPlans: 0,
  refusedKeys: 0,
  managementCalls: 0,
  plansRead: 0,
  complete: false,
}
