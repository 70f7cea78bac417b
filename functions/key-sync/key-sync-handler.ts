import middy, { type MiddlewareObj } from '@middy/core'
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda'
import { SCOPED_EVENT_NAMES } from '#keys/key-change-events-config.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { withOriginalStack } from '#shared/observability/original-stack.ts'
import {
  type CustomResourceAnswer,
  customResourceResponse,
  isCustomResourceEvent,
  type ResponseSender,
} from './cloudformation-response.ts'
import {
  idsIn,
  invokerIds,
  isConfirmation,
  type KeySyncEvent,
  MANAGEMENT_EVENT,
  type ManagementDetail,
  stringsIn,
} from './key-sync-events.ts'
import { keySyncReport, skipped } from './key-sync-report.ts'
import { type KeySyncRunDependencies, keySyncRun } from './key-sync-run.ts'

export interface KeySyncDependencies extends KeySyncRunDependencies {
  /** Answers the deploy's custom resource (tests pass a recorder). */
  sendResponse: ResponseSender
  /** Logger context and metrics publishing: outermost, sees every outcome. */
  observability?: MiddlewareObj<KeySyncEvent, KeySyncResult, Error, Context>[]
}

/**
 * Keeps the stage's key mirror equal to API Gateway, one run at a time (a lease in the mirror
 * table), within a time budget, and never from a read it cannot trust:
 * 1. Each run reads the plan and key listings whole, then the keys of plans named by management
 *    events, then as many other plans as its budget allows, going on where the last run stopped:
 *    a few hundred plans are all read every run; at AWS's ceilings a rotation spans runs.
 * 2. A read that contradicts itself writes nothing and fails (the source throws).
 * 3. Puts come before deletes; removals that look like a bad read or a console slip are held
 *    (removal-guard.ts) and alarmed.
 * 4. After a run that changed the mirror, the stage's authorizer cache is flushed.
 * 5. Ids named by events that arrive while a run holds the lease are read by that run, or by
 *    the next one it starts itself, before it returns: no change waits for the schedule.
 * A failure is counted, logged and rethrown: the next run retries, and the mirror keeps what the
 * last successful run wrote. Every success is counted, so a schedule that stops alarms.
 */
export const keySyncHandler = (deps: KeySyncDependencies) => {
  const { state, logger, metrics, clock, sendResponse } = deps
  const sync = keySyncRun(deps, keySyncReport(logger, metrics, clock))

  /**
   * The deploy's sync answers CloudFormation first, always SUCCESS, then syncs: a slow or failing
   * sync is alarmed and retried by the schedule, never a failed deploy or a stuck rollback. The
   * plans the template names are read first. Delete (a stack deletion or a rollback's cleanup)
   * only answers.
   */
  const deploySync = async (event: CloudFormationCustomResourceEvent, context: Context) => {
    const answer: CustomResourceAnswer = { status: 'SUCCESS' }
    try {
      await sendResponse(event.ResponseURL, customResourceResponse(event, answer))
    } catch (error) {
      logger.error('Could not answer CloudFormation', { error: withOriginalStack(error) })
    }
    if (event.RequestType === 'Delete') return skipped('stack-delete')
    const planIds = (event.ResourceProperties as { UsagePlanIds?: unknown }).UsagePlanIds
    await state.addPending(
      Array.isArray(planIds) ? planIds.filter((id): id is string => typeof id === 'string') : [],
      clock(),
    )
    return sync({ trigger: `CloudFormation ${event.RequestType}`, context })
  }

  /** A management event another stage's change caused. */
  const isOtherStage = async (detail: ManagementDetail) => {
    if (typeof detail.eventName !== 'string' || !SCOPED_EVENT_NAMES.has(detail.eventName)) {
      return false
    }
    const { stageIds } = await state.get()
    if (!stageIds) return false
    const known = new Set(stageIds)
    return !stringsIn(detail.requestParameters).some((value) => known.has(value))
  }

  return middy<KeySyncEvent, KeySyncResult, Error, Context>()
    .use(deps.observability ?? [])
    .handler(async (event, context) => {
      if (isCustomResourceEvent(event)) return deploySync(event, context)
      if (isConfirmation(event)) {
        const ids = event.confirmRemovals
        if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) {
          logger.error(
            'confirmRemovals takes the key ids the held removal lists; nothing confirmed',
          )
          return sync({ trigger: 'operator confirmation (invalid)', context })
        }
        return sync({ trigger: 'operator confirmation', context, confirmed: new Set(ids) })
      }
      const trigger = event?.['detail-type'] ?? 'unknown'
      if (trigger === MANAGEMENT_EVENT) {
        const detail = (event.detail ?? {}) as ManagementDetail
        if (await isOtherStage(detail)) {
          logger.info('Key sync skipped', { trigger, reason: 'other-stage' })
          return skipped('other-stage')
        }
        // Recorded before the lease is tried: a run holding it reads them before it returns.
        const ids = idsIn(detail.requestParameters)
        await state.addPending(ids, clock())
        return sync({ trigger, context, namedOnly: ids.length > 0 })
      }
      // An invoker that made a change (the keys CLI) names its plan and key ids: they are read
      // first, at any plan count, as an event's are.
      const ids = invokerIds(event.detail)
      await state.addPending(ids, clock())
      return sync({ trigger, context, namedOnly: ids.length > 0 })
    })
}
