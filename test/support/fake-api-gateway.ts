import {
  APIGatewayClient,
  type ApiKey,
  FlushStageAuthorizersCacheCommand,
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  NotFoundException,
  type UsagePlan,
} from '@aws-sdk/client-api-gateway'
import { mockClient } from 'aws-sdk-client-mock'
import { PLAN_TAGS } from '#shared/config/plans-config.ts'

export const FAKE_API_ID = 'a1b2c3d4e5'
export const FAKE_STAGE = 'production'

/** API Gateway's largest page: a larger `limit` is served as 500. */
const MAX_PAGE = 500

/** A key value as API Gateway makes them (20+ characters), derived from the key id. */
export const keyValueOf = (keyId: string): string => `${keyId}-value-0123456789abcdef`

export interface FakePlanOptions {
  tags?: Record<string, string>
  apiId?: string
  stage?: string
}

/** Tags of a standard plan, or of an Enterprise plan with its own limits. */
export const planTags = (
  plan: string,
  limits?: { perMinute: number | string; perDay: number | string },
): Record<string, string> => ({
  [PLAN_TAGS.plan]: plan,
  ...(limits
    ? { [PLAN_TAGS.perMinute]: String(limits.perMinute), [PLAN_TAGS.perDay]: String(limits.perDay) }
    : {}),
})

/**
 * The API Gateway management API's keys and usage plans, in memory, behind a real
 * APIGatewayClient (aws-sdk-client-mock), so the SDK paginators run unchanged. Pages follow the
 * request's `limit` (at most 500) with opaque positions; every call is recorded.
 */
export class FakeApiGateway {
  readonly client = new APIGatewayClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  })
  readonly mock = mockClient(this.client)
  readonly plans = new Map<string, UsagePlan>()
  readonly planKeys = new Map<string, string[]>()
  readonly keys = new Map<string, ApiKey>()
  failure: Error | undefined
  /** Keys the key listing leaves out while plans still list them: a read that contradicts itself. */
  readonly unlistedKeyIds = new Set<string>()
  /** Whether GetUsagePlans answers an empty list (plans momentarily missing from a read). */
  plansMissing = false
  /** GetUsagePlanKeys of these plans throws (a plan throttled or denied on every call). */
  readonly planKeysFailures = new Map<string, Error>()
  /** Plans GetUsagePlans leaves out (one plan missing from a page of the listing). */
  readonly unlistedPlanIds = new Set<string>()
  /** FlushStageAuthorizersCache calls, as `restApiId/stageName`. */
  readonly flushes: string[] = []
  /** Called on every flush (a test's model of API Gateway's authorizer cache). */
  onFlush: (() => void) | undefined

  constructor() {
    this.mock.on(GetUsagePlansCommand).callsFake(async (input) =>
      this.#page(
        this.plansMissing
          ? []
          : [...this.plans.values()]
              .filter((plan) => !this.unlistedPlanIds.has(plan.id ?? ''))
              // GetUsagePlans' keyId: only the plans the key is on.
              .filter(
                (plan) =>
                  input.keyId === undefined ||
                  (this.planKeys.get(plan.id ?? '') ?? []).includes(input.keyId),
              ),
        input,
      ),
    )
    this.mock.on(GetUsagePlanKeysCommand).callsFake(async (input) => {
      const failure = this.planKeysFailures.get(input.usagePlanId)
      if (failure) throw failure
      return this.#page(
        (this.planKeys.get(input.usagePlanId) ?? []).map((id) => ({
          id,
          type: 'API_KEY',
          name: this.keys.get(id)?.name,
        })),
        input,
      )
    })
    this.mock.on(GetApiKeysCommand).callsFake(async (input) =>
      this.#page(
        [...this.keys.values()]
          .filter((key) => !this.unlistedKeyIds.has(key.id ?? ''))
          .map((key) => (input.includeValues ? { ...key } : { ...key, value: undefined })),
        input,
      ),
    )
    this.mock.on(GetApiKeyCommand).callsFake(async (input) => {
      const key = this.keys.get(input.apiKey)
      if (!key) {
        throw new NotFoundException({
          message: 'Invalid API Key identifier specified',
          $metadata: {},
        })
      }
      return { ...key, value: input.includeValue ? key.value : undefined }
    })
    this.mock.on(FlushStageAuthorizersCacheCommand).callsFake(async (input) => {
      if (this.failure) throw this.failure
      this.flushes.push(`${input.restApiId}/${input.stageName}`)
      this.onFlush?.()
      return {}
    })
  }

  addPlan(id: string, { tags, apiId = FAKE_API_ID, stage = FAKE_STAGE }: FakePlanOptions = {}) {
    this.plans.set(id, { id, name: id, apiStages: [{ apiId, stage }], ...(tags ? { tags } : {}) })
    this.planKeys.set(id, this.planKeys.get(id) ?? [])
  }

  /** Creates a key (value derived from the id) and attaches it to a plan when one is named. */
  addKey(id: string, planId?: string, { enabled = true, value = keyValueOf(id) } = {}) {
    this.keys.set(id, { id, name: id, value, enabled })
    if (planId) this.attach(id, planId)
  }

  attach(keyId: string, planId: string) {
    this.planKeys.set(planId, [...(this.planKeys.get(planId) ?? []), keyId])
  }

  detach(keyId: string, planId: string) {
    this.planKeys.set(
      planId,
      (this.planKeys.get(planId) ?? []).filter((id) => id !== keyId),
    )
  }

  setEnabled(keyId: string, enabled: boolean) {
    const key = this.keys.get(keyId)
    if (!key) throw new Error(`No key ${keyId}`)
    this.keys.set(keyId, { ...key, enabled })
  }

  /** Management API calls so far, by command name. */
  callCounts(): Record<string, number> {
    const counts: Record<string, number> = {}
    for (const call of this.mock.calls()) {
      const name = (call.args[0] as object).constructor.name
      counts[name] = (counts[name] ?? 0) + 1
    }
    return counts
  }

  totalCalls(): number {
    return this.mock.calls().length
  }

  #page<T>(items: T[], input: { position?: string | undefined; limit?: number | undefined }) {
    if (this.failure) throw this.failure
    const size = Math.min(input.limit ?? 25, MAX_PAGE)
    const start = input.position === undefined ? 0 : Number(input.position.replace('pos-', ''))
    const end = start + size
    return {
      items: items.slice(start, end),
      ...(end < items.length ? { position: `pos-${end}` } : {}),
    }
  }
}
