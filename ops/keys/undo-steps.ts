import {
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  TagResourceCommand,
  UntagResourceCommand,
} from '@aws-sdk/client-api-gateway'
import { newApiKeyValue } from '#keys/api-key-value.ts'
import { DISABLE_AFTER_TAG } from '#keys/key-verdicts.ts'
import type { PlanLimits, PlanName } from '#shared/config/plans-config.ts'
import { causeOf, Interrupted, KeyAdminError } from './key-admin-error.ts'
import type { ManagementCalls } from './management-calls.ts'
import { type StagePlan, stagePlanOf } from './stage-plans.ts'

/** An undo step of a change under way: what it restores, and the call that restores it. */
export interface UndoStep {
  /** What undoing did, for the message (`deleted the new key …`). */
  what: string
  /** What stays if undoing fails, and how to fix it by hand. */
  left: string
  run: () => Promise<unknown>
}

export interface CreatedKey {
  id: string
  name: string
  /** The key itself: printed once, never logged. */
  value: string
  plan: string
  limits: PlanLimits
}

/**
 * Undoes a change left halfway, last step first (throttling is retried); what could not be
 * undone is returned with what it leaves, to be named to the operator.
 */
export const undo = async (
  calls: ManagementCalls,
  steps: UndoStep[],
): Promise<{ undone: string[]; left: string[] }> => {
  const undone: string[] = []
  const left: string[] = []
  for (const step of [...steps].reverse()) {
    try {
      await calls.retryingThrottled(step.run)
      undone.push(step.what)
    } catch (error) {
      left.push(`${step.left} (undoing it failed: ${causeOf(error)})`)
    }
  }
  return { undone, left }
}

/** The plan a key's value names: its tier (a customer's plan is `enterprise`). */
const planNameOf = (plan: StagePlan): PlanName =>
  'error' in plan.grant ? 'enterprise' : plan.grant.plan

/**
 * A new key on a plan, in an order an interruption or a failed call cannot leave halfway: the
 * key is made on no plan (so it gets 401) and handed out at once; for a rotation with an overlap
 * the old key's end is written next; attaching the new key, the step that makes it live, comes
 * last. A step that fails, or an interruption between steps, undoes the ones before (the new
 * key deleted, the old key's end put back) and says so.
 */
export const newKeyOn = async (
  calls: ManagementCalls,
  plan: StagePlan,
  {
    name,
    tags,
    onCreated,
    replacing,
  }: {
    name: string
    tags: Record<string, string>
    onCreated: ((key: { id: string; value: string }) => void) | undefined
    replacing?: { id: string; tags: Record<string, string> | undefined; overlapMs?: number }
  },
): Promise<CreatedKey & { disableAfter: string | undefined }> => {
  const steps: UndoStep[] = []
  let step = 'CreateApiKey'
  let newId: string | undefined
  let disableAfter: string | undefined
  try {
    const key = await calls.send(
      new CreateApiKeyCommand({
        name,
        enabled: true,
        tags,
        value: newApiKeyValue(await calls.context.macSecrets()),
      }),
    )
    if (!key.id || !key.value) throw new Error('CreateApiKey answered without an id or value')
    const id = key.id
    newId = id
    steps.push({
      what: `deleted the new key ${id}`,
      left: `key ${id} still exists, on no plan or on ${plan.label} (${calls.revokeCommand(id)})`,
      run: () => calls.send(new DeleteApiKeyCommand({ apiKey: id })),
    })
    onCreated?.({ id, value: key.value })
    if (replacing?.overlapMs !== undefined) {
      calls.checkpoint()
      step = 'TagResource'
      const old = replacing.id
      const previous = replacing.tags?.[DISABLE_AFTER_TAG]
      disableAfter = new Date(calls.context.clock() + replacing.overlapMs).toISOString()
      // Registered before the call: a call refused or cut off may still have been applied.
      steps.push({
        what:
          previous === undefined
            ? `removed the end it had written on key ${old}`
            : `put back key ${old}'s earlier end ${previous}`,
        left: `key ${old} stops working at ${disableAfter} (remove its tag ${DISABLE_AFTER_TAG} in the console, or rotate it again)`,
        run: () =>
          previous === undefined
            ? calls.send(
                new UntagResourceCommand({
                  resourceArn: calls.keyArn(old),
                  tagKeys: [DISABLE_AFTER_TAG],
                }),
              )
            : calls.send(
                new TagResourceCommand({
                  resourceArn: calls.keyArn(old),
                  tags: { [DISABLE_AFTER_TAG]: previous },
                }),
              ),
      })
      await calls.send(
        new TagResourceCommand({
          resourceArn: calls.keyArn(old),
          tags: { [DISABLE_AFTER_TAG]: disableAfter },
        }),
      )
    }
    calls.checkpoint()
    step = 'CreateUsagePlanKey'
    await calls.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: plan.id, keyId: id, keyType: 'API_KEY' }),
    )
    return {
      id,
      name,
      value: key.value,
      plan: plan.label,
      limits: (plan.grant as { limits: PlanLimits }).limits,
      disableAfter,
    }
  } catch (error) {
    const why =
      error instanceof Interrupted
        ? `interrupted (SIGINT or SIGTERM) before ${step}`
        : `${step} failed: ${causeOf(error)}`
    const what = replacing ? `Rotation of key ${replacing.id}` : 'Create'
    const { undone, left } = await undo(calls, steps)
    const discard = newId === undefined ? '' : ` (discard the value printed for key ${newId})`
    if (left.length > 0) {
      const kept = newId !== undefined && !undone.includes(`deleted the new key ${newId}`)
      throw new KeyAdminError(
        `${what} stopped (${why}) and could not be undone fully: ${left.join('; ')}${undone.length > 0 ? `; the CLI ${undone.join(' and ')}` : ''}`,
        { cause: error, keptKeyId: kept ? newId : undefined },
      )
    }
    const unchanged = replacing
      ? `nothing changed: key ${replacing.id} works as before, with no new key`
      : 'nothing changed: no key was made'
    throw new KeyAdminError(
      `${what} stopped (${why})${undone.length > 0 ? `; the CLI ${undone.join(' and ')}${discard}` : ''}: ${unchanged}`,
      { cause: error },
    )
  }
}

/** The options that name a plan on the keys CLI's command line: `--customer acme`, `--plan pro`. */
const selectorArguments = (plan: StagePlan): string =>
  plan.customer !== undefined ? `--customer ${plan.customer}` : `--plan ${planNameOf(plan)}`

/** Puts a key a failed move left on no plan back onto its old plan; the error that says where it is. */
export const undoMove = async (
  calls: ManagementCalls,
  keyId: string,
  {
    current,
    target,
    plans,
    why,
    error,
  }: {
    current: StagePlan | undefined
    target: StagePlan
    plans: StagePlan[]
    why: string
    error: unknown
  },
): Promise<KeyAdminError> => {
  const stopped = `Move of key ${keyId} to ${target.label} stopped (${why})`
  let now: StagePlan | undefined
  try {
    now = await calls.retryingThrottled(() => stagePlanOf(calls, keyId, plans))
  } catch (readError) {
    return new KeyAdminError(
      `${stopped}, and where the key is now could not be read (${causeOf(readError)}): run ${calls.context.keysCommand} list; if key ${keyId} is on no plan, ${calls.context.keysCommand} move ${keyId} ${current ? selectorArguments(current) : '--plan <plan>'}`,
      { cause: error },
    )
  }
  if (now?.id === target.id) {
    return new KeyAdminError(
      `${stopped}, but API Gateway applied it: key ${keyId} is on ${target.label}; the scheduled sync (every minute) brings its new limits into force`,
      { cause: error },
    )
  }
  if (now?.id === current?.id) {
    return new KeyAdminError(
      `${stopped}: nothing changed, key ${keyId} is on ${current?.label ?? 'no plan'} as before`,
      { cause: error },
    )
  }
  const plan = current as StagePlan
  const { left } = await undo(calls, [
    {
      what: `put key ${keyId} back on ${plan.label}`,
      left: `key ${keyId} is on no plan of stage ${calls.context.stage} and gets 401 (${calls.context.keysCommand} move ${keyId} ${selectorArguments(plan)} puts it back)`,
      run: () =>
        calls.send(
          new CreateUsagePlanKeyCommand({
            usagePlanId: plan.id,
            keyId,
            keyType: 'API_KEY',
          }),
        ),
    },
  ])
  return new KeyAdminError(
    left.length > 0
      ? `${stopped} and could not be undone: ${left.join('; ')}`
      : `${stopped}; the CLI put key ${keyId} back on ${plan.label}: nothing changed`,
    { cause: error },
  )
}
