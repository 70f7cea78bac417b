import {
  type APIGatewayClient,
  type ApiKey,
  BadRequestException,
  CreateApiKeyCommand,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  NotFoundException,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateApiKeyCommand,
  type UsagePlan,
} from '@aws-sdk/client-api-gateway'
import { isThrottlingError } from '@smithy/service-error-classification'
import { DISABLE_AFTER_TAG, isPastDisableAfter } from '#keys/api-gateway-key-source.ts'
import { type CallPacer, unpaced } from '#keys/call-pacer.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { PAGE_SIZE, readWholeListing } from '#keys/management-listing.ts'
import { stageTags } from '#keys/usage-plans-config.ts'
import type { StageOutputs } from '#ops/stage/stack-outputs-reader.ts'
import { shownArgument } from '#shared/auth/key-value-mask.ts'
import {
  PLAN_NAMES,
  PLAN_TAGS,
  type PlanFromTags,
  type PlanLimits,
  type PlanName,
  planFromTags,
} from '#shared/config/plans-config.ts'
import { usagePlanBackstop } from '#shared/config/usage-plan-backstop-config.ts'
import { checkUsagePlanNumbers } from '#shared/config/usage-plan-numbers-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { permissionAdvice } from './management-permissions-config.ts'
import { isRetryableSyncFailure, type MirrorView, type StageSync } from './stage-sync-client.ts'

/**
 * Everything the keys CLI does to a stage, as ordinary API Gateway management calls (the console
 * stays the source of truth and shows all of it), followed by a run of the stage's key sync and
 * a read of its key mirror, so a change is known to be in force when a command returns.
 */

/**
 * API Gateway's ceilings per account and Region ("Quotas for configuring and running a REST API
 * in API Gateway", AWS docs): 10,000 API keys, which cannot be raised, and 300 usage plans, which
 * can (Service Quotas). Staging and production in one account and Region share both.
 */
export const CEILINGS = { apiKeys: 10_000, usagePlans: 300 } as const
/** Warn from this share of a ceiling on. */
export const CEILING_WARNING_SHARE = 0.9

/**
 * The CLI's share of the management API's account-wide quota (10 requests/s, burst 40, shared
 * with deploys, the console and the key sync's 5/s: "Amazon API Gateway quotas", AWS docs). 3/s
 * also stays under CreateApiKey's and DeleteApiKey's own 5 requests/s. The CLI never calls
 * UpdateUsagePlan, which is limited to one call per 20 s.
 */
export const CLI_CALL_RATE = { burst: 5, perSecond: 3 } as const

/** The tag a per-customer Enterprise plan carries besides the plan tags. */
export const CUSTOMER_TAG = 'petstore:customer'
/** The tag a rotated key's successor carries: the id of the key it replaces. */
const ROTATED_FROM_TAG = 'petstore:rotatedFrom'

const CUSTOMER_NAME = /^[a-z0-9][a-z0-9-]{0,39}$/

/**
 * The range of a rotation's overlap, checked before any change. At least 5 minutes: the old key's
 * end is written before the new key is attached, and the new key needs up to the CLI's 90 s wait
 * (or a scheduled sync, every minute) to be in force. At most 365 days: an overlap is a handover,
 * and its end must be a date API Gateway's tag and the key sync read back (ISO 8601).
 */
export const OVERLAP_RANGE_MS = { min: 5 * 60_000, max: 365 * 86_400_000 } as const

/** A failure the operator can act on: printed as it is, without a stack. */
export class KeyAdminError extends Error {
  override name = 'KeyAdminError'
  /** The change is made in API Gateway; only seeing it in force failed (the mirror wait). */
  readonly made: boolean
  /** A key the command made that still exists (a create cut off after the key was made). */
  readonly keptKeyId: string | undefined

  constructor(
    message: string,
    options: ErrorOptions & { made?: boolean; keptKeyId?: string | undefined } = {},
  ) {
    super(message, options)
    this.made = options.made ?? false
    this.keptKeyId = options.keptKeyId
  }
}

type SdkError = Parameters<typeof isThrottlingError>[0]

const isThrottled = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  isThrottlingError(((error as { cause?: unknown }).cause ?? error) as SdkError)

/** What failed, in words that name no key value: the error's name, HTTP status and message. */
const causeOf = (error: unknown): string => {
  if (error instanceof KeyAdminError) return error.message
  const { name, message, $metadata } = (error ?? {}) as {
    name?: string
    message?: string
    $metadata?: { httpStatusCode?: number }
  }
  const status = $metadata?.httpStatusCode
  return `${name ?? 'Error'}${status === undefined ? '' : `, HTTP ${status}`}${message ? `: ${message}` : ''}`
}

/** A Ctrl-C (SIGINT) or SIGTERM the CLI passed on, at a step boundary or during the wait. */
class Interrupted extends Error {
  override name = 'Interrupted'
  override message = 'interrupted (SIGINT or SIGTERM)'
}

/** An undo step of a change under way: what it restores, and the call that restores it. */
interface UndoStep {
  /** What undoing did, for the message (`deleted the new key …`). */
  what: string
  /** What stays if undoing fails, and how to fix it by hand. */
  left: string
  run: () => Promise<unknown>
}

export type PlanSelector = { plan: PlanName } | { customer: string }

/** A usage plan attached to the stage, as the key sync will see it. */
export interface StagePlan {
  id: string
  name: string
  /** `free` … `enterprise` for the stage's own plans, `enterprise:<customer>` for a customer's. */
  label: string
  customer: string | undefined
  /** What its keys get, or why they are refused (planFromTags). */
  grant: PlanFromTags
}

export interface KeyRow {
  id: string
  name: string
  plan: string
  enabled: boolean
  createdDate: Date | undefined
  /** What the key's plan grants (undefined when the plan is refused: its keys get 401). */
  limits: PlanLimits | undefined
  /** When a rotation's overlap ends the key, if it does. */
  disableAfter: string | undefined
}

export interface CreatedKey {
  id: string
  name: string
  /** The key itself: printed once, never logged. */
  value: string
  plan: string
  limits: PlanLimits
}

export interface KeyAdminOptions {
  client: APIGatewayClient
  outputs: StageOutputs
  sync: StageSync
  /** The stage's name in plan names and tags (`local`, `staging`, `production`). */
  stage: string
  /** The Region in the ARNs TagResource takes. */
  region: string
  pacer?: CallPacer
  clock?: Clock
  sleep?: (ms: number) => Promise<void>
  /** How long a command waits for the key mirror to show its change. */
  mirrorWaitMs?: number
  /**
   * The keys CLI's command line for this stage, which messages name for a fix by hand
   * (`npm run keys -- --stage production`); default `npm run keys --`.
   */
  keysCommand?: string
  warn?: (message: string) => void
  /**
   * Aborted on Ctrl-C or SIGTERM: a management call under way finishes (its outcome is then
   * known), the command stops at its next step and undoes a change left halfway; the wait for the
   * mirror ends at once.
   */
  signal?: AbortSignal | undefined
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A duration in the words the CLI reads (`--overlap 24h`). */
const inWords = (ms: number) =>
  ms % 86_400_000 === 0
    ? `${ms / 86_400_000}d`
    : ms % 3_600_000 === 0
      ? `${ms / 3_600_000}h`
      : `${Math.round(ms / 60_000)}m`

/** Warnings for a Region near a ceiling (API keys, usage plans). */
export const ceilingWarnings = ({
  apiKeys,
  usagePlans,
}: {
  apiKeys: number
  usagePlans: number
}): string[] => [
  ...(apiKeys >= CEILINGS.apiKeys * CEILING_WARNING_SHARE
    ? [
        `${apiKeys.toLocaleString('en-US')} API keys in this Region of API Gateway's ${CEILINGS.apiKeys.toLocaleString('en-US')}, a quota AWS does not raise: revoke unused keys, or plan a second account or Region (docs/operations.md#ceilings)`,
      ]
    : []),
  ...(usagePlans >= CEILINGS.usagePlans * CEILING_WARNING_SHARE
    ? [
        `${usagePlans} usage plans in this Region of API Gateway's ${CEILINGS.usagePlans}: ask for more through Service Quotas before per-customer plans run out (docs/operations.md#ceilings)`,
      ]
    : []),
]

export class KeyAdmin {
  readonly #client: APIGatewayClient
  readonly #outputs: StageOutputs
  readonly #sync: StageSync
  readonly #stage: string
  readonly #region: string
  readonly #pacer: CallPacer
  readonly #clock: Clock
  readonly #sleep: (ms: number) => Promise<void>
  readonly #mirrorWaitMs: number
  readonly #warn: (message: string) => void
  readonly #signal: AbortSignal | undefined
  readonly #options: KeyAdminOptions
  /** The keys CLI's command line for this stage (KeyAdminOptions.keysCommand). */
  readonly keysCommand: string
  /** Management API calls made (each one paced). */
  calls = 0

  constructor(options: KeyAdminOptions) {
    this.#options = options
    this.keysCommand = options.keysCommand ?? 'npm run keys --'
    this.#client = options.client
    this.#outputs = options.outputs
    this.#sync = options.sync
    this.#stage = options.stage
    this.#region = options.region
    this.#pacer = options.pacer ?? unpaced
    this.#clock = options.clock ?? systemClock
    this.#sleep = options.sleep ?? defaultSleep
    this.#mirrorWaitMs = options.mirrorWaitMs ?? 90_000
    this.#warn = options.warn ?? (() => undefined)
    this.#signal = options.signal
  }

  /** The same stage without the interruption: what cleans up after an interrupted run. */
  uninterrupted(): KeyAdmin {
    return new KeyAdmin({ ...this.#options, signal: undefined })
  }

  /** The exact command that revokes a key by hand. */
  revokeCommand(keyId: string): string {
    return `${this.keysCommand} revoke ${keyId}`
  }

  /**
   * Every management call goes through here: paced, counted. A refusal for want of a permission
   * ends the command at once with the action and resource to add to the role (retrying cannot
   * cure it). No abort signal reaches the call: one under way finishes, so its outcome is known.
   */
  readonly #send = (async (command: Parameters<APIGatewayClient['send']>[0]) => {
    await this.#pacer.take()
    this.calls += 1
    try {
      return await this.#client.send(command)
    } catch (error) {
      const { name, $metadata } = (error ?? {}) as {
        name?: string
        $metadata?: { httpStatusCode?: number }
      }
      if (name === 'AccessDeniedException' || $metadata?.httpStatusCode === 403) {
        const operation = command.constructor.name
        throw new KeyAdminError(
          `API Gateway refused ${operation.replace(/Command$/, '')} (${causeOf(error)}): add ${permissionAdvice(operation, command.input as Record<string, unknown>, this.#region)} to your role (docs/operations.md#iam-permissions)`,
          { cause: error },
        )
      }
      throw error
    }
  }) as APIGatewayClient['send']

  /**
   * Every page of a listing. A `position` seen before would start the listing over (or loop): that
   * ends the command, naming the listing, rather than acting on part of it.
   */
  #all<Item>(
    listing: string,
    page: (position: string | undefined) => Promise<{ items?: Item[]; position?: string }>,
  ): Promise<Item[]> {
    return readWholeListing(page, (failure) =>
      failure.kind === 'repeated-position'
        ? new KeyAdminError(
            `API Gateway's ${listing} listing answered page ${failure.page} with a position it gave before: stopped rather than act on part of the listing; try again`,
          )
        : new KeyAdminError(
            `API Gateway's ${listing} listing did not end after ${failure.pages} pages of ${PAGE_SIZE}`,
          ),
    )
  }

  /** Throws once the operator interrupted: called between the steps of a change. */
  #checkpoint() {
    if (this.#signal?.aborted) throw new Interrupted()
  }

  /** A pause of the wait that an interruption ends at once. */
  async #pause(ms: number) {
    this.#checkpoint()
    const signal = this.#signal
    if (!signal) return this.#sleep(ms)
    let onAbort: (() => void) | undefined
    const aborted = new Promise<void>((resolve) => {
      onAbort = resolve
      signal.addEventListener('abort', onAbort, { once: true })
    })
    await Promise.race([this.#sleep(ms), aborted])
    if (onAbort) signal.removeEventListener('abort', onAbort)
    this.#checkpoint()
  }

  #onStage(plan: UsagePlan): boolean {
    return (plan.apiStages ?? []).some(
      (stage) => stage.apiId === this.#outputs.restApiId && stage.stage === this.#outputs.stageName,
    )
  }

  #labelOf(plan: UsagePlan & { id: string }): { label: string; customer: string | undefined } {
    const standard = PLAN_NAMES.find((name) => this.#outputs.planIds[name] === plan.id)
    if (standard) return { label: standard, customer: undefined }
    const customer = plan.tags?.[CUSTOMER_TAG]
    if (customer) return { label: `enterprise:${customer}`, customer }
    return { label: plan.name ?? plan.id, customer: undefined }
  }

  /** The stage's plans, and how many plans the Region has (for its ceiling). */
  async stagePlans(): Promise<{ plans: StagePlan[]; regionPlans: number }> {
    const all = await this.#all('usage plans (GetUsagePlans)', (position) =>
      this.#send(new GetUsagePlansCommand({ position, limit: PAGE_SIZE })),
    )
    const plans = all
      .filter((plan): plan is UsagePlan & { id: string } => plan.id !== undefined)
      .filter((plan) => this.#onStage(plan))
      .map((plan) => ({
        id: plan.id,
        name: plan.name ?? plan.id,
        ...this.#labelOf(plan),
        grant: planFromTags(plan.tags),
      }))
    return { plans, regionPlans: all.length }
  }

  #resolvePlan(plans: StagePlan[], selector: PlanSelector): StagePlan {
    const found =
      'plan' in selector
        ? plans.find((plan) => plan.id === this.#outputs.planIds[selector.plan])
        : plans.find((plan) => plan.customer === selector.customer)
    if (!found) {
      const wanted = 'plan' in selector ? selector.plan : `enterprise:${selector.customer}`
      throw new KeyAdminError(
        `No plan ${wanted} on stage ${this.#stage} (plans: ${plans.map((plan) => plan.label).join(', ') || 'none'})`,
      )
    }
    if ('error' in found.grant) {
      throw new KeyAdminError(
        `Usage plan ${found.name} is refused by the key sync (${found.grant.error}): its keys would get 401`,
      )
    }
    return found
  }

  async #regionKeys(): Promise<ApiKey[]> {
    return this.#all('API keys (GetApiKeys)', (position) =>
      this.#send(new GetApiKeysCommand({ position, limit: PAGE_SIZE, includeValues: false })),
    )
  }

  /** Warns near a ceiling; refuses what the ceiling would refuse anyway, saying why. */
  #checkCeilings(counts: { apiKeys: number; usagePlans: number }, adding: 'key' | 'plan') {
    if (adding === 'key' && counts.apiKeys >= CEILINGS.apiKeys) {
      throw new KeyAdminError(
        `This Region has ${CEILINGS.apiKeys.toLocaleString('en-US')} API keys, API Gateway's ceiling, which AWS does not raise: revoke unused keys first (docs/operations.md#ceilings)`,
      )
    }
    if (adding === 'plan' && counts.usagePlans >= CEILINGS.usagePlans) {
      throw new KeyAdminError(
        `This Region has ${counts.usagePlans} usage plans, API Gateway's quota (${CEILINGS.usagePlans}): ask for more through Service Quotas (docs/operations.md#ceilings)`,
      )
    }
    for (const warning of ceilingWarnings(counts)) this.#warn(warning)
  }

  /** A key by id, or by its name when that names exactly one key; with its value. */
  async #key(idOrName: string): Promise<ApiKey & { id: string; value: string }> {
    let key: ApiKey | undefined
    try {
      key = await this.#send(new GetApiKeyCommand({ apiKey: idOrName, includeValue: true }))
    } catch (error) {
      if (!(error instanceof NotFoundException) && !(error instanceof BadRequestException)) {
        throw error
      }
      const named = (
        await this.#all('API keys by name (GetApiKeys)', (position) =>
          this.#send(
            new GetApiKeysCommand({
              position,
              limit: PAGE_SIZE,
              nameQuery: idOrName,
              includeValues: true,
            }),
          ),
        )
      ).filter((candidate) => candidate.name === idOrName)
      if (named.length > 1) {
        throw new KeyAdminError(
          `${named.length} keys are named ${shownArgument(idOrName)}: use an id (${named.map((k) => k.id).join(', ')})`,
        )
      }
      key = named[0]
    }
    if (!key?.id || !key.value) throw new KeyAdminError(`No API key ${shownArgument(idOrName)}`)
    return key as ApiKey & { id: string; value: string }
  }

  /** The stage plan a key is on, if any (API Gateway allows one per stage). */
  async #stagePlanOf(keyId: string, plans: StagePlan[]): Promise<StagePlan | undefined> {
    const ofKey = await this.#all(`usage plans of key ${keyId} (GetUsagePlans)`, (position) =>
      this.#send(new GetUsagePlansCommand({ keyId, position, limit: PAGE_SIZE })),
    )
    const ids = new Set(ofKey.map((plan) => plan.id))
    return plans.find((plan) => ids.has(plan.id))
  }

  /** Interrupted before the first change of a command: nothing to undo. */
  #beforeChange() {
    if (this.#signal?.aborted) {
      throw new KeyAdminError('Interrupted (SIGINT or SIGTERM) before any change: nothing changed')
    }
  }

  /** A read or call that throttling alone made fail, tried again (three tries after the SDK's). */
  async #retryingThrottled<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call()
      } catch (error) {
        if (!isThrottled(error) || attempt >= 3) throw error
        await this.#sleep(1_000 * attempt)
      }
    }
  }

  /**
   * Undoes a change left halfway, last step first (throttling is retried); what could not be
   * undone is returned with what it leaves, to be named to the operator.
   */
  async #undo(steps: UndoStep[]): Promise<{ undone: string[]; left: string[] }> {
    const undone: string[] = []
    const left: string[] = []
    for (const step of [...steps].reverse()) {
      try {
        await this.#retryingThrottled(step.run)
        undone.push(step.what)
      } catch (error) {
        left.push(`${step.left} (undoing it failed: ${causeOf(error)})`)
      }
    }
    return { undone, left }
  }

  #keyArn(keyId: string) {
    return `arn:aws:apigateway:${this.#region}::/apikeys/${keyId}`
  }

  /**
   * Runs the stage's sync until its mirror shows what a change should have done, so the command
   * returns only once the change is in force (the sync flushes the authorizer cache after a
   * change). Only throttling and the sync's own "read again" are retried within the wait; a
   * missing permission, function or table ends it at once, as does an interruption. Every failure
   * starts with `made`: what is changed in API Gateway, by key id.
   */
  async #awaitMirror(
    keyHash: string,
    expected: (item: MirrorView | undefined) => boolean,
    made: string,
    ids: readonly string[],
  ): Promise<void> {
    const fail = (why: string) =>
      new KeyAdminError(`${made} in API Gateway, but ${why}`, { made: true })
    const retried = (error: unknown, deadline: number) => {
      this.#checkpoint()
      if (!isRetryableSyncFailure(error)) {
        return fail(
          `the CLI cannot see it in force: ${causeOf(error)}. The scheduled sync (every minute) brings it into force by itself`,
        )
      }
      if (this.#clock() < deadline) return undefined
      return fail(
        `the key sync failed (${causeOf(error)}); the scheduled sync retries every minute: see the key-sync log`,
      )
    }
    const deadline = this.#clock() + this.#mirrorWaitMs
    try {
      for (;;) {
        this.#checkpoint()
        let result: KeySyncResult
        try {
          result = await this.#sync.run(ids, this.#signal)
        } catch (error) {
          const failure = retried(error, deadline)
          if (failure) throw failure
          await this.#pause(2_000)
          continue
        }
        if (result.skipped === false) {
          let item: MirrorView | undefined
          try {
            // One strongly consistent read after the run: what the next request is authorized with.
            item = await this.#sync.mirrored(keyHash)
          } catch (error) {
            const failure = retried(error, deadline)
            if (failure) throw failure
            await this.#pause(1_000)
            continue
          }
          if (expected(item)) return
          if (result.heldRemovals > 0) {
            throw fail(
              `the key sync holds back a mass removal of ${result.heldRemovals} keys: it waits until runs agree for 5 minutes or an operator confirms it (docs/operations.md#key-sync-guard)`,
            )
          }
        }
        if (this.#clock() >= deadline) {
          throw fail(
            `the key mirror did not show it within ${Math.round(this.#mirrorWaitMs / 1000)} s; the scheduled sync retries every minute: see the key-sync log`,
          )
        }
        // A run in progress may have read API Gateway before the change: the next one will not.
        await this.#pause(result.skipped === 'lease-held' ? 2_000 : 1_000)
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

  #grantsOn(plan: StagePlan) {
    return (item: MirrorView | undefined, keyId: string) =>
      item?.keyId === keyId && item.usagePlanId === plan.id
  }

  async createKey({
    selector,
    name,
    onCreated,
  }: {
    selector: PlanSelector
    name: string
    /** Called as soon as the key exists, before it is attached: its value is never lost. */
    onCreated?: (key: { id: string; value: string }) => void
  }) {
    const { plans, regionPlans } = await this.stagePlans()
    const plan = this.#resolvePlan(plans, selector)
    this.#checkCeilings(
      { apiKeys: (await this.#regionKeys()).length, usagePlans: regionPlans },
      'key',
    )
    this.#beforeChange()
    const created = await this.#newKeyOn(plan, { name, tags: {}, onCreated })
    const grants = this.#grantsOn(plan)
    try {
      await this.#awaitMirror(
        hashApiKey(created.value),
        (item) => grants(item, created.id),
        `Key ${created.id} is created on ${plan.label}`,
        [created.id, plan.id],
      )
    } catch (error) {
      // The key is made and will work: the message says how to remove it if it is not wanted.
      throw new KeyAdminError(
        `${(error as Error).message}. If the key is not wanted: ${this.revokeCommand(created.id)}`,
        { cause: error, made: true, keptKeyId: created.id },
      )
    }
    return created
  }

  /**
   * A new key on a plan, in an order an interruption or a failed call cannot leave halfway: the
   * key is made on no plan (so it gets 401) and handed out at once; for a rotation with an overlap
   * the old key's end is written next; attaching the new key, the step that makes it live, comes
   * last. A step that fails, or an interruption between steps, undoes the ones before (the new
   * key deleted, the old key's end put back) and says so.
   */
  async #newKeyOn(
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
  ): Promise<CreatedKey & { disableAfter: string | undefined }> {
    const undo: UndoStep[] = []
    let step = 'CreateApiKey'
    let newId: string | undefined
    let disableAfter: string | undefined
    try {
      const key = await this.#send(new CreateApiKeyCommand({ name, enabled: true, tags }))
      if (!key.id || !key.value) throw new Error('CreateApiKey answered without an id or value')
      const id = key.id
      newId = id
      undo.push({
        what: `deleted the new key ${id}`,
        left: `key ${id} still exists, on no plan or on ${plan.label} (${this.revokeCommand(id)})`,
        run: () => this.#send(new DeleteApiKeyCommand({ apiKey: id })),
      })
      onCreated?.({ id, value: key.value })
      if (replacing?.overlapMs !== undefined) {
        this.#checkpoint()
        step = 'TagResource'
        const old = replacing.id
        const previous = replacing.tags?.[DISABLE_AFTER_TAG]
        disableAfter = new Date(this.#clock() + replacing.overlapMs).toISOString()
        // Registered before the call: a call refused or cut off may still have been applied.
        undo.push({
          what:
            previous === undefined
              ? `removed the end it had written on key ${old}`
              : `put back key ${old}'s earlier end ${previous}`,
          left: `key ${old} stops working at ${disableAfter} (remove its tag ${DISABLE_AFTER_TAG} in the console, or rotate it again)`,
          run: () =>
            previous === undefined
              ? this.#send(
                  new UntagResourceCommand({
                    resourceArn: this.#keyArn(old),
                    tagKeys: [DISABLE_AFTER_TAG],
                  }),
                )
              : this.#send(
                  new TagResourceCommand({
                    resourceArn: this.#keyArn(old),
                    tags: { [DISABLE_AFTER_TAG]: previous },
                  }),
                ),
        })
        await this.#send(
          new TagResourceCommand({
            resourceArn: this.#keyArn(old),
            tags: { [DISABLE_AFTER_TAG]: disableAfter },
          }),
        )
      }
      this.#checkpoint()
      step = 'CreateUsagePlanKey'
      await this.#send(
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
      const { undone, left } = await this.#undo(undo)
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

  /**
   * The stage's keys with their plans. Their use is the rate limiter's to say (the keys CLI reads
   * it there: the count the keys' own headers show).
   */
  async listKeys(): Promise<{ rows: KeyRow[]; otherKeys: number }> {
    const keys = await this.#regionKeys()
    const { plans, regionPlans } = await this.stagePlans()
    const planOfKey = new Map<string, StagePlan>()
    for (const plan of plans) {
      const planKeys = await this.#all(
        `keys of usage plan ${plan.id} (GetUsagePlanKeys)`,
        (position) =>
          this.#send(
            new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
          ),
      )
      for (const { id } of planKeys) if (id) planOfKey.set(id, plan)
    }
    for (const warning of ceilingWarnings({ apiKeys: keys.length, usagePlans: regionPlans })) {
      this.#warn(warning)
    }
    const rows = keys
      .filter(
        (key): key is ApiKey & { id: string } => key.id !== undefined && planOfKey.has(key.id),
      )
      .map((key) => {
        const grant = planOfKey.get(key.id)?.grant
        return {
          id: key.id,
          name: key.name ?? '',
          plan: planOfKey.get(key.id)?.label ?? '',
          enabled: key.enabled === true,
          createdDate: key.createdDate,
          limits: grant && !('error' in grant) ? grant.limits : undefined,
          disableAfter: key.tags?.[DISABLE_AFTER_TAG],
        }
      })
    return { rows, otherKeys: keys.length - rows.length }
  }

  async setEnabled(idOrName: string, enabled: boolean) {
    const key = await this.#key(idOrName)
    const { plans } = await this.stagePlans()
    const plan = await this.#stagePlanOf(key.id, plans)
    this.#beforeChange()
    await this.#send(
      new UpdateApiKeyCommand({
        apiKey: key.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: String(enabled) }],
      }),
    )
    const works =
      enabled &&
      plan !== undefined &&
      !('error' in plan.grant) &&
      !isPastDisableAfter(key.tags, this.#clock())
    const grants = plan ? this.#grantsOn(plan) : () => false
    await this.#awaitMirror(
      hashApiKey(key.value),
      (item) => (works ? grants(item, key.id) : item === undefined),
      `Key ${key.id} is ${enabled ? 'enabled' : 'disabled'}`,
      [key.id],
    )
    return { id: key.id, name: key.name ?? '', plan: plan?.label, works }
  }

  async revoke(idOrName: string) {
    const key = await this.#key(idOrName)
    this.#beforeChange()
    await this.#send(new DeleteApiKeyCommand({ apiKey: key.id }))
    await this.#awaitMirror(
      hashApiKey(key.value),
      (item) => item === undefined,
      `Key ${key.id} is revoked (deleted)`,
      [key.id],
    )
    return { id: key.id, name: key.name ?? '' }
  }

  /**
   * Off its plan, onto another. API Gateway refuses a second plan of the same stage, so the old
   * one goes first: a scheduled sync that runs exactly in between refuses the key until the
   * sync this command runs right after (seconds). A failed step or an interruption in between is
   * undone: where the key is then is read back (a call refused or cut off may still have been
   * applied), and a key left on no plan goes back onto its old one.
   */
  async move(idOrName: string, selector: PlanSelector) {
    const key = await this.#key(idOrName)
    const { plans } = await this.stagePlans()
    const target = this.#resolvePlan(plans, selector)
    const current = await this.#stagePlanOf(key.id, plans)
    if (current?.id === target.id) {
      throw new KeyAdminError(`Key ${key.id} is already on ${target.label}`)
    }
    const from = current?.label ?? 'no plan'
    this.#beforeChange()
    let step = current ? 'DeleteUsagePlanKey' : 'CreateUsagePlanKey'
    try {
      if (current) {
        await this.#send(new DeleteUsagePlanKeyCommand({ usagePlanId: current.id, keyId: key.id }))
        this.#checkpoint()
        step = 'CreateUsagePlanKey'
      }
      await this.#send(
        new CreateUsagePlanKeyCommand({
          usagePlanId: target.id,
          keyId: key.id,
          keyType: 'API_KEY',
        }),
      )
    } catch (error) {
      const why =
        error instanceof Interrupted
          ? `interrupted (SIGINT or SIGTERM) before ${step}`
          : `${step} failed: ${causeOf(error)}`
      throw await this.#undoMove(key.id, { current, target, plans, why, error })
    }
    const works = key.enabled === true && !isPastDisableAfter(key.tags, this.#clock())
    const grants = this.#grantsOn(target)
    await this.#awaitMirror(
      hashApiKey(key.value),
      (item) => (works ? grants(item, key.id) : item === undefined),
      `Key ${key.id} is moved from ${from} to ${target.label}`,
      [key.id, target.id, ...(current ? [current.id] : [])],
    )
    return { id: key.id, from: current?.label, to: target.label, works }
  }

  /** Puts a key a failed move left on no plan back onto its old plan; the error that says where it is. */
  async #undoMove(
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
  ): Promise<KeyAdminError> {
    const stopped = `Move of key ${keyId} to ${target.label} stopped (${why})`
    let now: StagePlan | undefined
    try {
      now = await this.#retryingThrottled(() => this.#stagePlanOf(keyId, plans))
    } catch (readError) {
      return new KeyAdminError(
        `${stopped}, and where the key is now could not be read (${causeOf(readError)}): run ${this.keysCommand} list; if key ${keyId} is on no plan, ${this.keysCommand} move ${keyId} ${current ? `--plan/--customer of ${current.label}` : ''}`.trimEnd(),
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
    const { left } = await this.#undo([
      {
        what: `put key ${keyId} back on ${plan.label}`,
        left: `key ${keyId} is on no plan of stage ${this.#stage} and gets 401 (${this.keysCommand} move ${keyId} to put it on a plan)`,
        run: () =>
          this.#send(
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

  /**
   * A new key on the old key's plan. The old key keeps working until it is revoked, or, with an
   * overlap, until its disable-after tag passes (the key sync then leaves it out). The overlap is
   * checked before any call, the new key's value handed out as soon as it exists, and the old
   * key's end written before the new key is attached (#newKeyOn).
   */
  async rotate(
    idOrName: string,
    {
      overlapMs,
      onCreated,
    }: { overlapMs?: number; onCreated?: (key: { id: string; value: string }) => void } = {},
  ) {
    if (
      overlapMs !== undefined &&
      !(
        Number.isSafeInteger(overlapMs) &&
        overlapMs >= OVERLAP_RANGE_MS.min &&
        overlapMs <= OVERLAP_RANGE_MS.max
      )
    ) {
      throw new KeyAdminError(
        `--overlap must be from ${inWords(OVERLAP_RANGE_MS.min)} to ${inWords(OVERLAP_RANGE_MS.max)}: nothing changed`,
      )
    }
    const old = await this.#key(idOrName)
    const { plans, regionPlans } = await this.stagePlans()
    const plan = await this.#stagePlanOf(old.id, plans)
    if (!plan) throw new KeyAdminError(`Key ${old.id} is on no plan of stage ${this.#stage}`)
    if ('error' in plan.grant) {
      throw new KeyAdminError(
        `Usage plan ${plan.name} is refused by the key sync (${plan.grant.error})`,
      )
    }
    this.#checkCeilings(
      { apiKeys: (await this.#regionKeys()).length, usagePlans: regionPlans },
      'key',
    )
    this.#beforeChange()
    const { disableAfter, ...created } = await this.#newKeyOn(plan, {
      name: old.name ?? '',
      tags: { [ROTATED_FROM_TAG]: old.id },
      onCreated,
      replacing: {
        id: old.id,
        tags: old.tags,
        ...(overlapMs === undefined ? {} : { overlapMs }),
      },
    })
    const grants = this.#grantsOn(plan)
    await this.#awaitMirror(
      hashApiKey(created.value),
      (item) => grants(item, created.id),
      `Key ${created.id} is created on ${plan.label} to replace key ${old.id}${
        disableAfter ? `, which works until ${disableAfter}` : ', which works until revoked'
      },`,
      [created.id, old.id, plan.id],
    )
    return { created, oldId: old.id, disableAfter }
  }

  /**
   * A per-customer Enterprise plan on the stage: tagged with its limits and its customer, with the
   * backstop every plan has (burst 2 x per-minute, rate per-minute / 30, DAY quota 3 x per-day).
   */
  async createCustomerPlan({
    customer,
    perMinute,
    perDay,
  }: {
    customer: string
    perMinute: number
    perDay: number
  }) {
    if (!CUSTOMER_NAME.test(customer)) {
      throw new KeyAdminError(
        'A customer name is 1 to 40 lowercase letters, digits and hyphens, starting with a letter or digit',
      )
    }
    if (!Number.isSafeInteger(perMinute) || perMinute < 1 || !Number.isSafeInteger(perDay)) {
      throw new KeyAdminError('--per-minute and --per-day must be positive integers')
    }
    if (perDay < perMinute) throw new KeyAdminError('--per-day must be at least --per-minute')
    const largest = this.#outputs.largestPlanPerMinute
    if (largest !== undefined && perMinute > largest) {
      // The stage's edge rules (WAF per-key rule) are derived from this: a larger plan would be
      // blocked at the edge below its own limit.
      throw new KeyAdminError(
        `--per-minute ${perMinute} is above the largest plan stage ${this.#stage} allows (${largest}/minute, its LargestPlanPerMinute output): raise the CDK context ${this.#stage}.largestPlanPerMinute (and throttleRateLimit if it says so) and deploy first (docs/operations.md#edge-rules)`,
      )
    }
    const { plans, regionPlans } = await this.stagePlans()
    const existing = plans.find((plan) => plan.customer === customer)
    if (existing) throw new KeyAdminError(`Customer ${customer} already has plan ${existing.id}`)
    this.#checkCeilings({ apiKeys: 0, usagePlans: regionPlans }, 'plan')
    const { rateLimit, burstLimit, dailyQuota } = usagePlanBackstop({ perMinute, perDay })
    checkUsagePlanNumbers(
      { rateLimit, burstLimit, quotaLimit: dailyQuota },
      (problem) =>
        new KeyAdminError(
          `--per-minute ${perMinute} --per-day ${perDay} make a usage plan API Gateway refuses: ${problem}`,
        ),
    )
    const plan = await this.#send(
      new CreateUsagePlanCommand({
        name: `petstore-${this.#stage}-enterprise-${customer}`,
        description: `Enterprise plan of ${customer} (${this.#stage}): ${perMinute} requests per minute, ${perDay} per day`,
        apiStages: [{ apiId: this.#outputs.restApiId, stage: this.#outputs.stageName }],
        throttle: { rateLimit, burstLimit },
        quota: { limit: dailyQuota, period: 'DAY' },
        tags: {
          [PLAN_TAGS.plan]: 'enterprise',
          [PLAN_TAGS.perMinute]: String(perMinute),
          [PLAN_TAGS.perDay]: String(perDay),
          [CUSTOMER_TAG]: customer,
          ...stageTags(this.#stage),
        },
      }),
    )
    return { id: plan.id as string, name: plan.name as string, label: `enterprise:${customer}` }
  }

  async listPlans() {
    const { plans } = await this.stagePlans()
    const rows = []
    for (const plan of plans) {
      const keys = await this.#all(`keys of usage plan ${plan.id} (GetUsagePlanKeys)`, (position) =>
        this.#send(
          new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
        ),
      )
      rows.push({ ...plan, keys: keys.length })
    }
    return rows
  }
}
