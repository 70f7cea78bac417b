import type { CloudFormationCustomResourceEvent, EventBridgeEvent } from 'aws-lambda'

/**
 * What invokes the sync: the EventBridge schedule ("Scheduled Event"), an API Gateway management
 * call ("AWS API Call via CloudTrail", source aws.apigateway), the keys CLI after a change (its
 * detail names the plan and key ids it changed, `{"ids": [...]}`), the deploy (a CloudFormation
 * custom resource event), or an operator confirming a held removal
 * (`{"confirmRemovals": [<key id>...]}`).
 * Only the trigger's name is logged (CloudTrail details may carry key data).
 */
export type KeySyncEvent =
  | EventBridgeEvent<string, unknown>
  | CloudFormationCustomResourceEvent
  | ConfirmRemovalsEvent

/**
 * An operator's confirmation of removals the guard holds: the ids of the keys, as the log line of
 * the held removal lists them (`confirm`). A held group goes only when every one of its keys is
 * named; a key the run would not remove anyway is never removed by being named.
 *
 * @example
 * aws lambda invoke --function-name <KeySyncFunctionName> \
 *   --cli-binary-format raw-in-base64-out --payload '{"confirmRemovals":["a1b2c3d4e5"]}' /dev/stdout
 */
export interface ConfirmRemovalsEvent {
  confirmRemovals: string[]
}

export const SCHEDULED_EVENT = 'Scheduled Event'
export const MANAGEMENT_EVENT = 'AWS API Call via CloudTrail'

/** What an API Gateway id looks like: a plan's or key's (10 lower-case letters and digits). */
const ID_PATTERN = /^[a-z0-9]{5,12}$/
/** Ids inside ARNs (TagResource's resourceArn: `arn:aws:apigateway:<region>::/usageplans/<id>`). */
const ARN_ID = /\/(?:usageplans|apikeys)\/([a-z0-9]{5,12})(?:\/|$)/g

/** Every string in a CloudTrail event's requestParameters (ids of plans and keys among them). */
export const stringsIn = (value: unknown, depth = 0): string[] => {
  if (typeof value === 'string') return [value]
  if (depth > 4 || typeof value !== 'object' || value === null) return []
  return Object.values(value).flatMap((child) => stringsIn(child, depth + 1))
}

/** The plan and key ids a management event names, ARNs included (never key values: too long). */
export const idsIn = (requestParameters: unknown): string[] => {
  const ids = new Set<string>()
  for (const value of stringsIn(requestParameters)) {
    if (ID_PATTERN.test(value)) ids.add(value)
    for (const match of value.matchAll(ARN_ID)) ids.add(match[1] as string)
  }
  return [...ids].sort()
}

/** The ids an invoker names in `detail.ids` (plan and key ids only; anything else is dropped). */
export const invokerIds = (detail: unknown): string[] => {
  const ids = (detail as { ids?: unknown } | null | undefined)?.ids
  return Array.isArray(ids)
    ? [...new Set(ids.filter((id): id is string => typeof id === 'string' && ID_PATTERN.test(id)))]
    : []
}

export const isConfirmation = (event: unknown): event is { confirmRemovals: unknown } =>
  typeof event === 'object' && event !== null && 'confirmRemovals' in event

/** A management call's detail: the call's name and its parameters (ids of plans and keys). */
export interface ManagementDetail {
  eventName?: unknown
  requestParameters?: unknown
}
