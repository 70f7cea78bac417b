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
  GetUsageCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  NotFoundException,
  TagResourceCommand,
  UpdateApiKeyCommand,
  type UsagePlan,
} from '@aws-sdk/client-api-gateway'
import {
  DISABLE_AFTER_TAG,
  isPastDisableAfter,
} from '#functions/key-sync/api-gateway-key-source.ts'
import { type CallPacer, unpaced } from '#functions/key-sync/call-pacer.ts'
import type { KeySyncResult } from '#functions/key-sync/key-sync-handler.ts'
import { stageTags } from '#infra/config/usage-plans-config.ts'
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
import type { StageOutputs } from './stack-outputs-reader.ts'
import type { MirrorView, StageSync } from './stage-sync-client.ts'

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
const MAX_PAGES = 200
const PAGE_SIZE = 500

/** A failure the operator can act on: printed as it is, without a stack. */
export class KeyAdminError extends Error {
  override name = 'KeyAdminError'
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

/** Why a usage read failed, in words that name no key: the error's name and HTTP status. */
const usageFailure = (error: unknown): string => {
  const { name, $metadata } = (error ?? {}) as {
    name?: string
    $metadata?: { httpStatusCode?: number }
  }
  const status = $metadata?.httpStatusCode
  return `GetUsage failed (${name ?? 'Error'}${status === undefined ? '' : `, HTTP ${status}`})`
}

export interface KeyRow {
  id: string
  name: string
  plan: string
  enabled: boolean
  createdDate: Date | undefined
  /** Requests API Gateway counted today (UTC) for the key on its plan (GetUsage); undefined
   * when usage could not be read (listKeys' usageUnavailable says why). */
  usedToday: number | undefined
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
  warn?: (message: string) => void
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10)

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
  /** Management API calls made (each one paced). */
  calls = 0

  constructor(options: KeyAdminOptions) {
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
  }

  /** Every management call goes through here: paced, counted. */
  readonly #send = (async (command: Parameters<APIGatewayClient['send']>[0]) => {
    await this.#pacer.take()
    this.calls += 1
    return this.#client.send(command)
  }) as APIGatewayClient['send']

  async #all<Item>(
    page: (position: string | undefined) => Promise<{ items?: Item[]; position?: string }>,
  ): Promise<Item[]> {
    const items: Item[] = []
    let position: string | undefined
    for (let count = 0; count < MAX_PAGES; count += 1) {
      const result = await page(position)
      items.push(...(result.items ?? []))
      if (!result.position || result.position === position) return items
      position = result.position
    }
    throw new Error(`A listing of API Gateway did not end after ${MAX_PAGES} pages`)
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
    const all = await this.#all((position) =>
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
    return this.#all((position) =>
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
        await this.#all((position) =>
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
          `${named.length} keys are named ${idOrName}: use an id (${named.map((k) => k.id).join(', ')})`,
        )
      }
      key = named[0]
    }
    if (!key?.id || !key.value) throw new KeyAdminError(`No API key ${idOrName}`)
    return key as ApiKey & { id: string; value: string }
  }

  /** The stage plan a key is on, if any (API Gateway allows one per stage). */
  async #stagePlanOf(keyId: string, plans: StagePlan[]): Promise<StagePlan | undefined> {
    const ofKey = await this.#all((position) =>
      this.#send(new GetUsagePlansCommand({ keyId, position, limit: PAGE_SIZE })),
    )
    const ids = new Set(ofKey.map((plan) => plan.id))
    return plans.find((plan) => ids.has(plan.id))
  }

  /**
   * Runs the stage's sync until its mirror shows what a change should have done, so the command
   * returns only once the change is in force (the sync flushes the authorizer cache after a change).
   */
  async #awaitMirror(
    keyHash: string,
    expected: (item: MirrorView | undefined) => boolean,
    what: string,
  ): Promise<void> {
    const deadline = this.#clock() + this.#mirrorWaitMs
    for (;;) {
      let result: KeySyncResult
      try {
        result = await this.#sync.run()
      } catch (error) {
        // A listing read moments after the change may not show it yet (the sync then refuses the
        // inconsistent read): the change is made, so a later run is the retry.
        if (this.#clock() >= deadline) {
          throw new KeyAdminError(
            `The change is made in API Gateway, but the key sync failed (${(error as Error).message}); the scheduled sync retries every minute: see the key-sync log`,
          )
        }
        await this.#sleep(2_000)
        continue
      }
      if (result.skipped === false) {
        // Reads of the mirror may lag its writes a moment (eventually consistent GetItem).
        for (let read = 0; read < 3; read += 1) {
          if (expected(await this.#sync.mirrored(keyHash))) return
          if (result.heldRemovals > 0) {
            throw new KeyAdminError(
              `The change is made in API Gateway, but the key sync holds back a mass removal of ${result.heldRemovals} keys: ${what} waits until runs agree for 5 minutes or an operator confirms it (docs/operations.md#key-sync-guard)`,
            )
          }
          await this.#sleep(500)
        }
      }
      if (this.#clock() >= deadline) {
        throw new KeyAdminError(
          `The change is made in API Gateway, but the key mirror did not show it within ${Math.round(this.#mirrorWaitMs / 1000)} s (${what}); the scheduled sync retries every minute: see the key-sync log`,
        )
      }
      // A run in progress may have read API Gateway before the change: the next one will not.
      await this.#sleep(result.skipped === 'lease-held' ? 2_000 : 1_000)
    }
  }

  #grantsOn(plan: StagePlan) {
    return (item: MirrorView | undefined, keyId: string) =>
      item?.keyId === keyId && item.usagePlanId === plan.id
  }

  async createKey({ selector, name }: { selector: PlanSelector; name: string }) {
    const { plans, regionPlans } = await this.stagePlans()
    const plan = this.#resolvePlan(plans, selector)
    this.#checkCeilings(
      { apiKeys: (await this.#regionKeys()).length, usagePlans: regionPlans },
      'key',
    )
    return this.#newKeyOn(plan, { name, tags: {} })
  }

  async #newKeyOn(
    plan: StagePlan,
    { name, tags }: { name: string; tags: Record<string, string> },
  ): Promise<CreatedKey> {
    const key = await this.#send(new CreateApiKeyCommand({ name, enabled: true, tags }))
    if (!key.id || !key.value) throw new Error('CreateApiKey answered without an id or value')
    const id = key.id
    try {
      await this.#send(
        new CreateUsagePlanKeyCommand({ usagePlanId: plan.id, keyId: id, keyType: 'API_KEY' }),
      )
    } catch (error) {
      // A key on no plan gets 401 anyway; it must not linger towards the ceiling.
      await this.#send(new DeleteApiKeyCommand({ apiKey: id })).catch(() => undefined)
      throw error
    }
    const grants = this.#grantsOn(plan)
    await this.#awaitMirror(hashApiKey(key.value), (item) => grants(item, id), `key ${id} to work`)
    return {
      id,
      name,
      value: key.value,
      plan: plan.label,
      limits: (plan.grant as { limits: PlanLimits }).limits,
    }
  }

  /**
   * The stage's keys with today's use. A usage read that fails (an emulator without GetUsage, a
   * role without apigateway:GET on usage) leaves the counts out and says why: the keys are what
   * an operator lists for.
   */
  async listKeys(): Promise<{ rows: KeyRow[]; otherKeys: number; usageUnavailable?: string }> {
    const keys = await this.#regionKeys()
    const { plans, regionPlans } = await this.stagePlans()
    const planOfKey = new Map<string, StagePlan>()
    const usedToday = new Map<string, number>()
    let usageUnavailable: string | undefined
    const today = utcDay(this.#clock())
    for (const plan of plans) {
      const planKeys = await this.#all((position) =>
        this.#send(
          new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
        ),
      )
      for (const { id } of planKeys) if (id) planOfKey.set(id, plan)
      if (planKeys.length === 0 || usageUnavailable !== undefined) continue
      try {
        const usage = await this.#send(
          new GetUsageCommand({ usagePlanId: plan.id, startDate: today, endDate: today }),
        )
        for (const [keyId, days] of Object.entries(usage.items ?? {})) {
          usedToday.set(keyId, days.at(-1)?.[0] ?? 0)
        }
      } catch (error) {
        usageUnavailable = usageFailure(error)
      }
    }
    for (const warning of ceilingWarnings({ apiKeys: keys.length, usagePlans: regionPlans })) {
      this.#warn(warning)
    }
    const rows = keys
      .filter(
        (key): key is ApiKey & { id: string } => key.id !== undefined && planOfKey.has(key.id),
      )
      .map((key) => ({
        id: key.id,
        name: key.name ?? '',
        plan: planOfKey.get(key.id)?.label ?? '',
        enabled: key.enabled === true,
        createdDate: key.createdDate,
        usedToday: usageUnavailable === undefined ? (usedToday.get(key.id) ?? 0) : undefined,
        disableAfter: key.tags?.[DISABLE_AFTER_TAG],
      }))
    return {
      rows,
      otherKeys: keys.length - rows.length,
      ...(usageUnavailable === undefined ? {} : { usageUnavailable }),
    }
  }

  async setEnabled(idOrName: string, enabled: boolean) {
    const key = await this.#key(idOrName)
    const { plans } = await this.stagePlans()
    const plan = await this.#stagePlanOf(key.id, plans)
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
      works ? `key ${key.id} to work` : `key ${key.id} to stop working`,
    )
    return { id: key.id, name: key.name ?? '', plan: plan?.label, works }
  }

  async revoke(idOrName: string) {
    const key = await this.#key(idOrName)
    await this.#send(new DeleteApiKeyCommand({ apiKey: key.id }))
    await this.#awaitMirror(
      hashApiKey(key.value),
      (item) => item === undefined,
      `key ${key.id} to stop working`,
    )
    return { id: key.id, name: key.name ?? '' }
  }

  /**
   * Off its plan, onto another. API Gateway refuses a second plan of the same stage, so the old
   * one goes first: a scheduled sync that runs exactly in between refuses the key until the
   * sync this command runs right after (seconds).
   */
  async move(idOrName: string, selector: PlanSelector) {
    const key = await this.#key(idOrName)
    const { plans } = await this.stagePlans()
    const target = this.#resolvePlan(plans, selector)
    const current = await this.#stagePlanOf(key.id, plans)
    if (current?.id === target.id) {
      throw new KeyAdminError(`Key ${key.id} is already on ${target.label}`)
    }
    if (current) {
      await this.#send(new DeleteUsagePlanKeyCommand({ usagePlanId: current.id, keyId: key.id }))
    }
    await this.#send(
      new CreateUsagePlanKeyCommand({ usagePlanId: target.id, keyId: key.id, keyType: 'API_KEY' }),
    )
    const works = key.enabled === true && !isPastDisableAfter(key.tags, this.#clock())
    const grants = this.#grantsOn(target)
    await this.#awaitMirror(
      hashApiKey(key.value),
      (item) => (works ? grants(item, key.id) : item === undefined),
      `key ${key.id} on ${target.label}`,
    )
    return { id: key.id, from: current?.label, to: target.label, works }
  }

  /**
   * A new key on the old key's plan. The old key keeps working until it is revoked, or, with an
   * overlap, until its disable-after tag passes (the key sync then leaves it out).
   */
  async rotate(idOrName: string, { overlapMs }: { overlapMs?: number } = {}) {
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
    const created = await this.#newKeyOn(plan, {
      name: old.name ?? '',
      tags: { [ROTATED_FROM_TAG]: old.id },
    })
    let disableAfter: string | undefined
    if (overlapMs !== undefined) {
      disableAfter = new Date(this.#clock() + overlapMs).toISOString()
      await this.#send(
        new TagResourceCommand({
          resourceArn: `arn:aws:apigateway:${this.#region}::/apikeys/${old.id}`,
          tags: { [DISABLE_AFTER_TAG]: disableAfter },
        }),
      )
    }
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
      const keys = await this.#all((position) =>
        this.#send(
          new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
        ),
      )
      rows.push({ ...plan, keys: keys.length })
    }
    return rows
  }
}
