import middy, { type MiddlewareObj } from '@middy/core'
import type { Context } from 'aws-lambda'
import {
  type CloudWatchLogsEvent,
  decodeLogsEvent,
  isCloudWatchLogsEvent,
} from './access-log-events.ts'
import {
  type AddressBlockRunDependencies,
  addressBlockRun,
  type LiftResult,
  type ReconcileResult,
  type RecordResult,
} from './address-block-run.ts'

/** An operator's lift: `aws lambda invoke --payload '{"lift":["198.51.100.7"]}'`. */
export interface LiftEvent {
  lift: string[]
}

/**
 * What invokes the function: CloudWatch Logs with the access log's unauthorized lines, the
 * minute's schedule (any other event), or an operator lifting blocks.
 */
export type AddressBlockEvent = CloudWatchLogsEvent | LiftEvent | Record<string, unknown>

export type AddressBlockResult =
  | RecordResult
  | ReconcileResult
  | LiftResult
  | { kind: 'control-message' }
  | { kind: 'refused'; reason: string }

const isLiftEvent = (event: unknown): event is { lift: unknown } =>
  typeof event === 'object' && event !== null && 'lift' in event

export interface AddressBlockDependencies extends AddressBlockRunDependencies {
  /** Logger context and metrics publishing: outermost, sees every outcome. */
  observability?: MiddlewareObj<AddressBlockEvent, AddressBlockResult, Error, Context>[]
}

/**
 * The address-block function (docs/operations.md, "Automatic block"): each invocation reads its
 * event and hands it to one step of the run (address-block-run.ts).
 */
export const addressBlockHandler = (deps: AddressBlockDependencies) => {
  const run = addressBlockRun(deps)
  return middy<AddressBlockEvent, AddressBlockResult, Error, Context>()
    .use(deps.observability ?? [])
    .handler(async (event) => {
      if (isCloudWatchLogsEvent(event)) {
        const payload = decodeLogsEvent(event)
        if (payload.messageType === 'CONTROL_MESSAGE') return { kind: 'control-message' }
        return run.record(payload.logEvents)
      }
      if (isLiftEvent(event)) {
        const { lift } = event
        if (!Array.isArray(lift) || !lift.every((address) => typeof address === 'string')) {
          deps.logger.error('lift takes a list of addresses; nothing lifted')
          return { kind: 'refused', reason: 'lift takes a list of addresses' }
        }
        return run.lift(lift)
      }
      return run.reconcile()
    })
}
