import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { causeOf, Interrupted, KeyAdminError } from './key-admin-error.ts'
import type { ManagementCalls } from './management-calls.ts'
import { isRetryableSyncFailure, type MirrorView } from './stage-sync-client.ts'

/** A change a command made, as the key mirror should show it. */
export interface MirrorChange {
  /** The mirror item of the key the change is about. */
  keyHash: string
  /** Whether the item (undefined: none) shows the change. */
  expected: (item: MirrorView | undefined) => boolean
  /** What is changed in API Gateway, by key id: every failure starts with it. */
  made: string
  /** The key and plan ids the change named: the sync reads their plans first. */
  ids: readonly string[]
}

/**
 * Runs the stage's sync until its mirror shows what a change should have done, so the command
 * returns only once the change is in force (the sync flushes the authorizer cache after a
 * change). Only throttling and the sync's own "read again" are retried within the wait; a
 * missing permission, function or table ends it at once, as does an interruption. Every failure
 * starts with `made`: what is changed in API Gateway, by key id.
 */
export const awaitMirror = async (
  calls: ManagementCalls,
  { keyHash, expected, made, ids }: MirrorChange,
): Promise<void> => {
  const fail = (why: string) =>
    new KeyAdminError(`${made} in API Gateway, but ${why}`, { made: true })
  const retried = (error: unknown, deadline: number) => {
    calls.checkpoint()
    if (!isRetryableSyncFailure(error)) {
      return fail(
        `the CLI cannot see it in force: ${causeOf(error)}. The scheduled sync (every minute) brings it into force by itself`,
      )
    }
    if (calls.context.clock() < deadline) return undefined
    return fail(
      `the key sync failed (${causeOf(error)}); the scheduled sync retries every minute: see the key-sync log`,
    )
  }
  const deadline = calls.context.clock() + calls.context.mirrorWaitMs
  try {
    for (;;) {
      calls.checkpoint()
      let result: KeySyncResult
      try {
        result = await calls.context.sync.run(ids, calls.context.signal)
      } catch (error) {
        const failure = retried(error, deadline)
        if (failure) throw failure
        await calls.pause(2_000)
        continue
      }
      if (result.skipped === false) {
        let item: MirrorView | undefined
        try {
          // One strongly consistent read after the run: what the next request is authorized with.
          item = await calls.context.sync.mirrored(keyHash)
        } catch (error) {
          const failure = retried(error, deadline)
          if (failure) throw failure
          await calls.pause(1_000)
          continue
        }
        if (expected(item)) return
        if (result.heldRemovals > 0) {
          throw fail(
            `the key sync holds back a mass removal of ${result.heldRemovals} keys: it waits until runs agree for 5 minutes or an operator confirms it (docs/operations.md#key-sync-guard)`,
          )
        }
      }
      if (calls.context.clock() >= deadline) {
        throw fail(
          `the key mirror did not show it within ${Math.round(calls.context.mirrorWaitMs / 1000)} s; the scheduled sync retries every minute: see the key-sync log`,
        )
      }
      // A run in progress may have read API Gateway before the change: the next one will not.
      await calls.pause(result.skipped === 'lease-held' ? 2_000 : 1_000)
    }
  } catch (error) {
    if (error instanceof Interrupted) {
      throw fail(
        'interrupted (SIGINT or SIGTERM) before the key mirror showed it: the scheduled sync (every minute) brings it into force by itself',
      )
    }
    throw error
  }
}
