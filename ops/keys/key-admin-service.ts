import {
  type ApiKey,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetUsagePlanKeysCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { ApiGatewayAuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import { DISABLE_AFTER_TAG, isPastDisableAfter } from '#keys/key-verdicts.ts'
import { PAGE_SIZE } from '#keys/management-listing.ts'
import type { StoreKeyStore } from '#keys/store-key-requests.ts'
import { usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import { checkUsagePlanNumbers } from '#keys/usage-plan-numbers-config.ts'
import { isPoolPlan, stageTags } from '#keys/usage-plans-config.ts'
import { PLAN_TAGS, type PlanLimits } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { causeOf, Interrupted, KeyAdminError } from './key-admin-error.ts'
import { type KeyAdminOptions, ManagementCalls } from './management-calls.ts'
import { awaitMirror } from './mirror-wait.ts'
import {
  CUSTOMER_TAG,
  ceilingWarnings,
  checkCeilings,
  grantsOn,
  type PlanSelector,
  resolvePlan,
  type StagePlan,
  stagePlanOf,
  stagePlans,
} from './stage-plans.ts'
import type { MirrorView } from './stage-sync-client.ts'
import { StoreKeyAdmin } from './store-key-admin.ts'
import { newKeyOn, undoMove } from './undo-steps.ts'

/**
 * Everything the keys CLI does to a stage, as ordinary API Gateway management calls (the console
 * stays the source of truth and shows all of it), followed by a run of the stage's key sync and
 * a read of its key mirror, so a change is known to be in force when a command returns.
 */

/**
 * The CLI's share of the management API's account-wide quota (10 requests/s, burst 40, shared
 * with deploys, the console and the key sync's 5/s: "Amazon API Gateway quotas", AWS docs). 3/s
 * also stays under CreateApiKey's and DeleteApiKey's own 5 requests/s. The CLI never calls
 * UpdateUsagePlan, which is limited to one call per 20 s.
 */
export const CLI_CALL_RATE = { burst: 5, perSecond: 3 } as const
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

export interface KeyRow {
  id: string
  name: string
  plan: string
  /** The usage plan the key is on (the key mirror names it for a key it holds). */
  planId: string
  enabled: boolean
  createdDate: Date | undefined
  /** What the key's plan grants (undefined when the plan is refused: its keys get 401). */
  limits: PlanLimits | undefined
  /** When a rotation's overlap ends the key, if it does. */
  disableAfter: string | undefined
}

/** A duration in the words the CLI reads (`--overlap 24h`). */
const inWords = (ms: number) =>
  ms % 86_400_000 === 0
    ? `${ms / 86_400_000}d`
    : ms % 3_600_000 === 0
      ? `${ms / 3_600_000}h`
      : `${Math.round(ms / 60_000)}m`

export class KeyAdmin {
  readonly #calls: ManagementCalls

  constructor(options: KeyAdminOptions) {
    this.#calls = new ManagementCalls(options)
  }

  /** The keys CLI's command line for this stage (KeyAdminOptions.keysCommand). */
  get keysCommand(): string {
    return this.#calls.context.keysCommand
  }

  /** Management API calls made (each one paced). */
  get calls(): number {
    return this.#calls.calls
  }

  /** The same stage without the interruption: what cleans up after an interrupted run. */
  uninterrupted(): KeyAdmin {
    return new KeyAdmin({ ...this.#calls.options, signal: undefined })
  }

  /** The exact command that revokes a key by hand. */
  revokeCommand(keyId: string): string {
    return this.#calls.revokeCommand(keyId)
  }

  /** The same stage's store keys, in `keys` (its table, or the local control plane's). */
  storeKeys(keys: StoreKeyStore): StoreKeyAdmin {
    const { client, outputs } = this.#calls.context
    return new StoreKeyAdmin(
      this.#calls,
      keys,
      new ApiGatewayAuthorizerCacheFlusher(client, outputs.restApiId, outputs.stageName),
    )
  }

  /** The stage's plans, and how many plans the Region has (for its ceiling). */
  stagePlans(): Promise<{ plans: StagePlan[]; regionPlans: number }> {
    return stagePlans(this.#calls)
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
    const { plans, regionPlans } = await stagePlans(this.#calls)
    const plan = resolvePlan(this.#calls, plans, selector)
    checkCeilings(
      this.#calls,
      { apiKeys: (await this.#calls.regionKeys()).length, usagePlans: regionPlans },
      'key',
    )
    this.#calls.beforeChange()
    const created = await newKeyOn(this.#calls, plan, { name, tags: {}, onCreated })
    const grants = grantsOn(plan)
    try {
      await awaitMirror(this.#calls, {
        keyHash: hashApiKey(created.value),
        expected: (item) => grants(item, created.id),
        made: `Key ${created.id} is created on ${plan.label}`,
        ids: [created.id, plan.id],
      })
    } catch (error) {
      // The key is made and will work: the message says how to remove it if it is not wanted.
      throw new KeyAdminError(
        `${(error as Error).message}. If the key is not wanted: ${this.#calls.revokeCommand(created.id)}`,
        { cause: error, made: true, keptKeyId: created.id },
      )
    }
    return created
  }

  /**
   * The stage's keys with their plans. Their use is the rate limiter's to say (the keys CLI reads
   * it there: the count the keys' own headers show).
   */
  async listKeys(): Promise<{ rows: KeyRow[]; otherKeys: number }> {
    const keys = await this.#calls.regionKeys()
    const { plans, regionPlans } = await stagePlans(this.#calls)
    const planOfKey = new Map<string, StagePlan>()
    for (const plan of plans) {
      const planKeys = await this.#calls.all(
        `keys of usage plan ${plan.id} (GetUsagePlanKeys)`,
        (position) =>
          this.#calls.send(
            new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
          ),
      )
      for (const { id } of planKeys) if (id) planOfKey.set(id, plan)
    }
    for (const warning of ceilingWarnings({ apiKeys: keys.length, usagePlans: regionPlans })) {
      this.#calls.context.warn(warning)
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
          planId: planOfKey.get(key.id)?.id ?? '',
          enabled: key.enabled === true,
          createdDate: key.createdDate,
          limits: grant && !('error' in grant) ? grant.limits : undefined,
          disableAfter: key.tags?.[DISABLE_AFTER_TAG],
        }
      })
    // The stage's pool key (store keys are metered under it) is no customer's key.
    const pool = keys.filter((key) => isPoolPlan(key.tags)).length
    return { rows, otherKeys: keys.length - rows.length - pool }
  }

  /**
   * What the key mirror holds for a key, read strongly consistently: what the key's next request
   * is authorized with (undefined: it gets 401). Reads the key's value (GetApiKey) to find its item.
   */
  async mirrored(keyId: string): Promise<MirrorView | undefined> {
    const key = await this.#calls.key(keyId)
    return this.#calls.context.sync.mirrored(hashApiKey(key.value))
  }

  async setEnabled(idOrName: string, enabled: boolean) {
    const key = await this.#calls.key(idOrName)
    const { plans } = await stagePlans(this.#calls)
    const plan = await stagePlanOf(this.#calls, key.id, plans)
    this.#calls.beforeChange()
    await this.#calls.send(
      new UpdateApiKeyCommand({
        apiKey: key.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: String(enabled) }],
      }),
    )
    const works =
      enabled &&
      plan !== undefined &&
      !('error' in plan.grant) &&
      !isPastDisableAfter(key.tags, this.#calls.context.clock())
    const grants = plan ? grantsOn(plan) : () => false
    await awaitMirror(this.#calls, {
      keyHash: hashApiKey(key.value),
      expected: (item) => (works ? grants(item, key.id) : item === undefined),
      made: `Key ${key.id} is ${enabled ? 'enabled' : 'disabled'}`,
      ids: [key.id],
    })
    return { id: key.id, name: key.name ?? '', plan: plan?.label, works }
  }

  async revoke(idOrName: string) {
    const key = await this.#calls.key(idOrName)
    this.#calls.beforeChange()
    await this.#calls.send(new DeleteApiKeyCommand({ apiKey: key.id }))
    await awaitMirror(this.#calls, {
      keyHash: hashApiKey(key.value),
      expected: (item) => item === undefined,
      made: `Key ${key.id} is revoked (deleted)`,
      ids: [key.id],
    })
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
    const key = await this.#calls.key(idOrName)
    const { plans } = await stagePlans(this.#calls)
    const target = resolvePlan(this.#calls, plans, selector)
    const current = await stagePlanOf(this.#calls, key.id, plans)
    if (current?.id === target.id) {
      throw new KeyAdminError(`Key ${key.id} is already on ${target.label}`)
    }
    const from = current?.label ?? 'no plan'
    this.#calls.beforeChange()
    let step = current ? 'DeleteUsagePlanKey' : 'CreateUsagePlanKey'
    try {
      if (current) {
        await this.#calls.send(
          new DeleteUsagePlanKeyCommand({ usagePlanId: current.id, keyId: key.id }),
        )
        this.#calls.checkpoint()
        step = 'CreateUsagePlanKey'
      }
      await this.#calls.send(
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
      throw await undoMove(this.#calls, key.id, { current, target, plans, why, error })
    }
    const works = key.enabled === true && !isPastDisableAfter(key.tags, this.#calls.context.clock())
    const grants = grantsOn(target)
    await awaitMirror(this.#calls, {
      keyHash: hashApiKey(key.value),
      expected: (item) => (works ? grants(item, key.id) : item === undefined),
      made: `Key ${key.id} is moved from ${from} to ${target.label}`,
      ids: [key.id, target.id, ...(current ? [current.id] : [])],
    })
    return { id: key.id, from: current?.label, to: target.label, works }
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
    const old = await this.#calls.key(idOrName)
    const { plans, regionPlans } = await stagePlans(this.#calls)
    const plan = await stagePlanOf(this.#calls, old.id, plans)
    if (!plan)
      throw new KeyAdminError(`Key ${old.id} is on no plan of stage ${this.#calls.context.stage}`)
    if ('error' in plan.grant) {
      throw new KeyAdminError(
        `Usage plan ${plan.name} is refused by the key sync (${plan.grant.error})`,
      )
    }
    checkCeilings(
      this.#calls,
      { apiKeys: (await this.#calls.regionKeys()).length, usagePlans: regionPlans },
      'key',
    )
    this.#calls.beforeChange()
    const { disableAfter, ...created } = await newKeyOn(this.#calls, plan, {
      name: old.name ?? '',
      tags: { [ROTATED_FROM_TAG]: old.id },
      onCreated,
      replacing: {
        id: old.id,
        tags: old.tags,
        ...(overlapMs === undefined ? {} : { overlapMs }),
      },
    })
    const grants = grantsOn(plan)
    await awaitMirror(this.#calls, {
      keyHash: hashApiKey(created.value),
      expected: (item) => grants(item, created.id),
      made: `Key ${created.id} is created on ${plan.label} to replace key ${old.id}${
        disableAfter ? `, which works until ${disableAfter}` : ', which works until revoked'
      },`,
      ids: [created.id, old.id, plan.id],
    })
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
    const largest = this.#calls.context.outputs.largestPlanPerMinute
    if (largest !== undefined && perMinute > largest) {
      // The stage's edge rules (WAF per-key rule) are derived from this: a larger plan would be
      // blocked at the edge below its own limit.
      throw new KeyAdminError(
        `--per-minute ${perMinute} is above the largest plan stage ${this.#calls.context.stage} allows (${largest}/minute, its LargestPlanPerMinute output): raise the CDK context ${this.#calls.context.stage}.largestPlanPerMinute (and throttleRateLimit if it says so) and deploy first (docs/operations.md#edge-rules)`,
      )
    }
    const { plans, regionPlans } = await stagePlans(this.#calls)
    const existing = plans.find((plan) => plan.customer === customer)
    if (existing) throw new KeyAdminError(`Customer ${customer} already has plan ${existing.id}`)
    checkCeilings(this.#calls, { apiKeys: 0, usagePlans: regionPlans }, 'plan')
    const { rateLimit, burstLimit, dailyQuota } = usagePlanBackstop({ perMinute, perDay })
    checkUsagePlanNumbers(
      { rateLimit, burstLimit, quotaLimit: dailyQuota },
      (problem) =>
        new KeyAdminError(
          `--per-minute ${perMinute} --per-day ${perDay} make a usage plan API Gateway refuses: ${problem}`,
        ),
    )
    const plan = await this.#calls.send(
      new CreateUsagePlanCommand({
        name: `petstore-${this.#calls.context.stage}-enterprise-${customer}`,
        description: `Enterprise plan of ${customer} (${this.#calls.context.stage}): ${perMinute} requests per minute, ${perDay} per day`,
        apiStages: [
          {
            apiId: this.#calls.context.outputs.restApiId,
            stage: this.#calls.context.outputs.stageName,
          },
        ],
        throttle: { rateLimit, burstLimit },
        quota: { limit: dailyQuota, period: 'DAY' },
        tags: {
          [PLAN_TAGS.plan]: 'enterprise',
          [PLAN_TAGS.perMinute]: String(perMinute),
          [PLAN_TAGS.perDay]: String(perDay),
          [CUSTOMER_TAG]: customer,
          ...stageTags(this.#calls.context.stage),
        },
      }),
    )
    return { id: plan.id as string, name: plan.name as string, label: `enterprise:${customer}` }
  }

  async listPlans() {
    const { plans } = await stagePlans(this.#calls)
    const rows = []
    for (const plan of plans) {
      const keys = await this.#calls.all(
        `keys of usage plan ${plan.id} (GetUsagePlanKeys)`,
        (position) =>
          this.#calls.send(
            new GetUsagePlanKeysCommand({ usagePlanId: plan.id, position, limit: PAGE_SIZE }),
          ),
      )
      rows.push({ ...plan, keys: keys.length })
    }
    return rows
  }
}
