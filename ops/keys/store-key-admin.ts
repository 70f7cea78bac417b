import { newProjectKey } from '#keys/api-key-value.ts'
import type { AuthorizerCacheFlusher } from '#keys/authorizer-cache-flusher.ts'
import type { StoreKeyStore } from '#keys/store-key-requests.ts'
import { currentMacVersion } from '#shared/auth/project-key.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { KeyAdminError } from './key-admin-error.ts'
import { OVERLAP_RANGE_MS } from './key-admin-service.ts'
import type { ManagementCalls } from './management-calls.ts'
import { type PlanSelector, resolvePlan, type StagePlan, stagePlans } from './stage-plans.ts'
import type { CreatedKey } from './undo-steps.ts'

/**
 * The keys CLI's store keys: keys that live only in the stage's store key table, never in API
 * Gateway and never through its management API (only a plan listing, to know what a plan
 * grants, and a cache flush). Made with the stage's MAC secret, hashed at rest, the value shown
 * once. A change that takes a key away (disable, revoke, move, a rotation's overlap) is a
 * strongly consistent write the authorizer's next read sees; the command then flushes the
 * stage's authorizer cache, waits out the authorizer's timeout (a call that read before the write
 * could cache its answer just after the first flush) and flushes again, so the change is in force
 * when it returns: the same promise as for an API Gateway key, without the key sync.
 */
export class StoreKeyAdmin {
  readonly #calls: ManagementCalls
  readonly #keys: StoreKeyStore
  readonly #flusher: AuthorizerCacheFlusher

  constructor(calls: ManagementCalls, keys: StoreKeyStore, flusher: AuthorizerCacheFlusher) {
    this.#calls = calls
    this.#keys = keys
    this.#flusher = flusher
  }

  /** A store key by id (`s-…`); names are not looked up: a million keys have no unique names. */
  async key(keyId: string): Promise<StoreKeyItem> {
    const item = await this.#keys.get(keyId)
    if (!item) {
      throw new KeyAdminError(
        `No store key ${keyId} on stage ${this.#calls.context.stage} (${this.#calls.context.keysCommand} list --store lists them)`,
      )
    }
    return item
  }

  /** What a plan of the stage grants (its tags), for a key made or moved onto it. */
  async #grant(selector: PlanSelector): Promise<{ plan: StagePlan; limits: PlanLimits }> {
    const { plans } = await stagePlans(this.#calls)
    const plan = resolvePlan(this.#calls, plans, selector)
    const grant = plan.grant as { limits: PlanLimits }
    return { plan, limits: grant.limits }
  }

  #planFields(plan: StagePlan, limits: PlanLimits) {
    const grant = plan.grant as { plan: StoreKeyItem['plan'] }
    return {
      plan: grant.plan,
      perMinute: limits.perMinute,
      perDay: limits.perDay,
      ...(plan.customer === undefined ? {} : { customer: plan.customer }),
    }
  }

  /** The label `list` and messages show for a store key's plan (`pro`, `enterprise:acme`). */
  static label(item: Pick<StoreKeyItem, 'plan' | 'customer'>): string {
    return item.customer === undefined ? item.plan : `enterprise:${item.customer}`
  }

  async #newKey({
    selector,
    name,
    onCreated,
    rotatedFrom,
  }: {
    selector: PlanSelector
    name: string
    onCreated: ((key: { id: string; value: string }) => void) | undefined
    rotatedFrom?: string
  }): Promise<CreatedKey> {
    const { plan, limits } = await this.#grant(selector)
    const secrets = await this.#calls.context.macSecrets()
    const { value, keyId } = newProjectKey('store', secrets)
    const id = keyId as string
    this.#calls.beforeChange()
    await this.#keys.put({
      keyId: id,
      keyHash: hashApiKey(value),
      name,
      ...this.#planFields(plan, limits),
      enabled: true,
      createdAt: new Date(this.#calls.context.clock()).toISOString(),
      macVersion: currentMacVersion(secrets),
      ...(rotatedFrom === undefined ? {} : { rotatedFrom }),
    })
    // One write, strongly consistent for the authorizer's read: it works on its first request.
    onCreated?.({ id, value })
    return { id, name, value, plan: plan.label, limits }
  }

  create(options: {
    selector: PlanSelector
    name: string
    onCreated?: (key: { id: string; value: string }) => void
  }): Promise<CreatedKey> {
    return this.#newKey({ ...options, onCreated: options.onCreated })
  }

  /** Flushes the stage's authorizer cache, waits out the authorizer's timeout, flushes again. */
  async #inForce(made: string): Promise<void> {
    try {
      await this.#flusher.flush()
      const until = this.#calls.context.clock() + FUNCTION_TIMEOUT_SECONDS.authorizer * 1_000
      while (this.#calls.context.clock() < until) await this.#calls.pause(100)
      await this.#flusher.flush()
    } catch (error) {
      throw new KeyAdminError(
        `${made}, but the stage's authorizer cache could not be flushed (${(error as Error).name}: ${(error as Error).message}): answers cached before the change last up to the cache TTL`,
        { cause: error, made: true },
      )
    }
  }

  async setEnabled(keyId: string, enabled: boolean) {
    await this.key(keyId)
    this.#calls.beforeChange()
    const item = await this.#keys.change(keyId, { enabled })
    await this.#inForce(`Store key ${keyId} is ${enabled ? 'enabled' : 'disabled'}`)
    const works =
      enabled &&
      (item.disableAfter === undefined ||
        Date.parse(item.disableAfter) > this.#calls.context.clock())
    return { id: keyId, name: item.name, plan: StoreKeyAdmin.label(item), works }
  }

  async revoke(keyId: string) {
    const item = await this.key(keyId)
    this.#calls.beforeChange()
    await this.#keys.delete(keyId)
    await this.#inForce(`Store key ${keyId} is revoked (deleted)`)
    return { id: keyId, name: item.name }
  }

  async move(keyId: string, selector: PlanSelector) {
    const before = await this.key(keyId)
    const { plan, limits } = await this.#grant(selector)
    if (StoreKeyAdmin.label(before) === plan.label) {
      throw new KeyAdminError(`Store key ${keyId} is already on ${plan.label}`)
    }
    this.#calls.beforeChange()
    const item = await this.#keys.change(keyId, { plan: this.#planFields(plan, limits) })
    await this.#inForce(`Store key ${keyId} is moved to ${plan.label}`)
    return {
      id: keyId,
      from: StoreKeyAdmin.label(before),
      to: plan.label,
      works: item.enabled,
    }
  }

  /**
   * A new store key on the old key's plan, with the old key's name; the old key works until it is
   * revoked, or until the overlap ends (its `disableAfter`, which the authorizer reads with the
   * key: refused from then on, once a cached allow of it expires, within the cache TTL).
   */
  async rotate(
    keyId: string,
    {
      overlapMs,
      onCreated,
    }: { overlapMs?: number; onCreated?: (key: { id: string; value: string }) => void } = {},
  ) {
    if (
      overlapMs !== undefined &&
      !(overlapMs >= OVERLAP_RANGE_MS.min && overlapMs <= OVERLAP_RANGE_MS.max)
    ) {
      throw new KeyAdminError('--overlap must be from 5m to 365d: nothing changed')
    }
    const old = await this.key(keyId)
    const selector: PlanSelector =
      old.customer === undefined ? { plan: old.plan } : { customer: old.customer }
    const created = await this.#newKey({ selector, name: old.name, onCreated, rotatedFrom: keyId })
    let disableAfter: string | undefined
    if (overlapMs !== undefined) {
      disableAfter = new Date(this.#calls.context.clock() + overlapMs).toISOString()
      await this.#keys.change(keyId, { disableAfter })
    }
    return { created, oldId: keyId, disableAfter }
  }

  page(options: { limit: number; after?: string | undefined; plan?: string | undefined }) {
    return this.#keys.page(options)
  }
}
