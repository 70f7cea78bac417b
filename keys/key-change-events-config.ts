/**
 * API Gateway management calls that can change which keys are valid or their plans: the key
 * sync's EventBridge rule listens for these (infra/constructs/key-sync-construct.ts), and the sync
 * reads an event by them (functions/key-sync/key-sync-handler.ts). They reach EventBridge as "AWS
 * API Call via CloudTrail" events only if the account has a CloudTrail trail logging management
 * events ("Monitor API Gateway events in EventBridge", "Events from AWS services", AWS docs);
 * without one the schedule alone bounds the delay.
 *
 * `scoped`: the call names the usage plan or key it changes, so one that names none of the
 * stage's ids concerns another stage (or no stage) and costs this stage no sync. `any`: the call
 * (creating or updating a plan, tags, imports) can attach something to any stage, so it always
 * syncs.
 */
export const KEY_CHANGE_EVENTS = {
  CreateApiKey: 'any',
  UpdateApiKey: 'scoped',
  DeleteApiKey: 'scoped',
  ImportApiKeys: 'any',
  CreateUsagePlan: 'any',
  UpdateUsagePlan: 'any',
  DeleteUsagePlan: 'scoped',
  CreateUsagePlanKey: 'scoped',
  DeleteUsagePlanKey: 'scoped',
  TagResource: 'any',
  UntagResource: 'any',
} as const satisfies Record<string, 'scoped' | 'any'>

export const KEY_CHANGE_EVENT_NAMES = Object.keys(KEY_CHANGE_EVENTS)

export const SCOPED_EVENT_NAMES: ReadonlySet<string> = new Set(
  Object.entries(KEY_CHANGE_EVENTS)
    .filter(([, scope]) => scope === 'scoped')
    .map(([name]) => name),
)
