import { rename } from 'node:fs/promises'
import { newApiKeyValue } from '#keys/api-key-value.ts'
import { IN_MEMORY } from '#keys/local-control-config.ts'
import {
  isPoolPlan,
  POOL_PLAN_TAG,
  poolPlanSpec,
  stageTags,
  usagePlanSpecs,
} from '#keys/usage-plans-config.ts'
import type { MacSecrets } from '#shared/auth/project-key.ts'
import {
  PLAN_DISPLAY_NAMES,
  PLAN_NAMES,
  type PlanLimits,
  type PlanName,
} from '#shared/config/plans-config.ts'
import {
  type ControlPlaneStore,
  generateKeyValue,
  LOCAL_API_STAGE,
  type StoredUsagePlan,
} from './control-plane-store.ts'
import { keyFilePath, readKeyFile } from './legacy-key-file.ts'

/** What a start did about keys, for the banner (key values only of keys it created). */
export interface LocalKeys {
  /**
   * The pool key store keys are metered under: a secret the authorizer holds (POOL_USAGE_KEY),
   * never printed, never a bearer key.
   */
  poolKey: string
  /** Keys this start created, one per plan, because the stage had no enabled key: printed once. */
  created: { plan: PlanName; key: string }[]
  /** Keys of PETSTORE_API_KEYS, by their control-plane id (never printed). */
  fromEnv: { plan: PlanName; id: string }[]
  /** Other enabled keys of the local stage. */
  others: number
  /** Keys moved in from the key file of earlier versions by this start. */
  imported: number
  /** The control plane's file, or undefined with `:memory:`. */
  file: string | undefined
}

export interface LocalKeySources {
  dataDir: string
  /** The local stage's MAC secrets: its first keys are project keys, as the keys CLI makes them. */
  macSecrets: MacSecrets
  apiKeys: { plan: PlanName; key: string }[]
  enterpriseLimits: PlanLimits
}

/** The local stage's name in plan names and tags: `petstore-local-free`, as CDK names them. */
const LOCAL_STAGE_NAME = 'local'

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

const onLocalStage = (plan: StoredUsagePlan) =>
  plan.apiStages.some(
    (stage) => stage.apiId === LOCAL_API_STAGE.apiId && stage.stage === LOCAL_API_STAGE.stage,
  )

/**
 * How the local stage meters a key by its value's digest (the gateway's usage-plan step): on
 * which of its plans the key is, as API Gateway refuses any other key with 403 (methods require
 * an API key, key source AUTHORIZER), whatever the authorizer answered. A plan with neither
 * throttle nor quota (the pool plan) refuses nothing; the others have the backstop of their tier.
 */
export const localUsagePlanOf =
  (store: ControlPlaneStore) =>
  (digest: string): 'backstop' | 'unthrottled' | undefined => {
    const key = store.apiKeyByDigest(digest)
    if (!key?.enabled) return undefined
    const plan = store.plansOfKey(key.id).find(onLocalStage)
    if (!plan) return undefined
    return plan.throttle === undefined && plan.quota === undefined ? 'unthrottled' : 'backstop'
  }

/**
 * The pool plan and its one key, as the CDK makes them for a stage: a plan with neither throttle
 * nor quota on the local stage, tagged as the pool, and an enabled key on it whose value only the
 * authorizer holds. Returns the pool key's value.
 */
const ensurePool = async (store: ControlPlaneStore): Promise<string> => {
  const spec = poolPlanSpec(LOCAL_STAGE_NAME)
  const tags = { ...spec.tags, ...stageTags(LOCAL_STAGE_NAME) }
  const plan =
    store.usagePlans().find((candidate) => isPoolPlan(candidate.tags)) ??
    (await store.createUsagePlan({
      name: spec.name,
      description: spec.description,
      apiStages: [{ ...LOCAL_API_STAGE }],
      tags,
    }))
  let key = store.apiKeys().find((candidate) => isPoolPlan(candidate.tags))
  key ??= await store.createApiKey({
    name: `${spec.name}-pool`,
    value: generateKeyValue(),
    enabled: true,
    tags: { [POOL_PLAN_TAG.key]: POOL_PLAN_TAG.value },
  })
  if (!key.enabled) {
    await store.updateApiKey(key.id, [{ op: 'replace', path: '/enabled', value: 'true' }])
  }
  if (!store.plansOfKey(key.id).some((candidate) => candidate.id === plan.id)) {
    await store.attachKey(plan.id, key.id)
  }
  return key.value
}

/**
 * The four plans exactly as the CDK makes them for a stage (usagePlanSpecs: name, description,
 * backstop throttle and DAY quota, the plan tags and the stacks' tags), on the local stage. A
 * start with other ENTERPRISE_LIMITS updates them, as a deploy with other context would.
 */
const ensureStandardPlans = async (
  store: ControlPlaneStore,
  enterpriseLimits: PlanLimits,
): Promise<Record<PlanName, string>> => {
  const ids: Partial<Record<PlanName, string>> = {}
  for (const spec of usagePlanSpecs(LOCAL_STAGE_NAME, enterpriseLimits)) {
    const tags = { ...spec.tags, ...stageTags(LOCAL_STAGE_NAME) }
    const quota = { limit: spec.dailyQuota, offset: 0, period: 'DAY' as const }
    let plan = store.usagePlans().find((candidate) => candidate.name === spec.name)
    if (!plan) {
      plan = await store.createUsagePlan({
        name: spec.name,
        description: spec.description,
        apiStages: [{ ...LOCAL_API_STAGE }],
        throttle: spec.throttle,
        quota,
        tags,
      })
    } else {
      const operations = [
        ...(onLocalStage(plan)
          ? []
          : [
              {
                op: 'add',
                path: '/apiStages',
                value: `${LOCAL_API_STAGE.apiId}:${LOCAL_API_STAGE.stage}`,
              },
            ]),
        ...(plan.description === spec.description
          ? []
          : [{ op: 'replace', path: '/description', value: spec.description }]),
        ...(sameJson(plan.throttle, spec.throttle)
          ? []
          : [
              {
                op: 'replace',
                path: '/throttle/rateLimit',
                value: String(spec.throttle.rateLimit),
              },
              {
                op: 'replace',
                path: '/throttle/burstLimit',
                value: String(spec.throttle.burstLimit),
              },
            ]),
        ...(sameJson(plan.quota, quota)
          ? []
          : [
              { op: 'replace', path: '/quota/limit', value: String(quota.limit) },
              { op: 'replace', path: '/quota/period', value: quota.period },
            ]),
      ]
      if (operations.length > 0) await store.updateUsagePlan(plan.id, operations)
      if (Object.entries(tags).some(([key, value]) => plan?.tags[key] !== value)) {
        await store.tag(`/usageplans/${plan.id}`, tags)
      }
    }
    ids[spec.plan] = plan.id
  }
  return ids as Record<PlanName, string>
}

/** Puts a key on one plan of the local stage (off any other plan of it). */
const placeOnPlan = async (store: ControlPlaneStore, keyId: string, usagePlanId: string) => {
  for (const plan of store.plansOfKey(keyId)) {
    if (plan.id !== usagePlanId && onLocalStage(plan)) await store.detachKey(plan.id, keyId)
  }
  if (!store.plansOfKey(keyId).some((plan) => plan.id === usagePlanId)) {
    await store.attachKey(usagePlanId, keyId)
  }
}

/**
 * Gets the local control plane ready before anything else starts: the four plans, the keys of
 * the key file of earlier versions (moved in once; the file is then renamed `.imported`), the
 * keys of PETSTORE_API_KEYS (enabled, on the plan the variable names, on every start) and, when
 * the stage has no enabled key at all, one new key per plan. An unusable key file throws
 * LocalKeyFileError: the server does not start on it.
 */
export const bootstrapControlPlane = async (
  store: ControlPlaneStore,
  { dataDir, apiKeys, enterpriseLimits, macSecrets }: LocalKeySources,
): Promise<LocalKeys> => {
  const legacyFile = dataDir === IN_MEMORY ? undefined : keyFilePath(dataDir)
  const legacyKeys = legacyFile ? await readKeyFile(legacyFile) : []
  const planIds = await ensureStandardPlans(store, enterpriseLimits)
  const poolKey = await ensurePool(store)

  let imported = 0
  for (const entry of legacyKeys) {
    // Revoked keys stay revoked: they are not moved.
    if (entry.revokedAt !== undefined || store.apiKeyByValue(entry.key)) continue
    const createdDate = Date.parse(entry.createdAt)
    const key = await store.createApiKey({
      name: `imported-${entry.plan}`,
      value: entry.key,
      enabled: true,
      ...(Number.isFinite(createdDate) ? { createdDate } : {}),
      tags: { 'petstore:source': 'api-keys.json' },
    })
    await store.attachKey(planIds[entry.plan], key.id)
    imported += 1
  }
  // Moved: a key revoked later with `npm run keys` must not come back from the old file.
  if (legacyFile && legacyKeys.length > 0) await rename(legacyFile, `${legacyFile}.imported`)

  const fromEnv: LocalKeys['fromEnv'] = []
  for (const { plan, key: value } of apiKeys) {
    let key = store.apiKeyByValue(value)
    key ??= await store.createApiKey({
      name: `env-${plan}`,
      value,
      enabled: true,
      tags: { 'petstore:source': 'PETSTORE_API_KEYS' },
    })
    if (!key.enabled)
      await store.updateApiKey(key.id, [{ op: 'replace', path: '/enabled', value: 'true' }])
    await placeOnPlan(store, key.id, planIds[plan])
    fromEnv.push({ plan, id: key.id })
  }

  // Customers' keys only: the pool key is no bearer key.
  const stagePlans = store
    .usagePlans()
    .filter((plan) => onLocalStage(plan) && !isPoolPlan(plan.tags))
  const enabledKeyIds = () =>
    new Set(
      stagePlans
        .flatMap((plan) => store.planKeyIds(plan.id))
        .filter((id) => store.apiKey(id).enabled),
    )
  const created: LocalKeys['created'] = []
  if (enabledKeyIds().size === 0) {
    for (const plan of PLAN_NAMES) {
      const key = await store.createApiKey({
        name: `first-${plan}`,
        value: newApiKeyValue(macSecrets),
        enabled: true,
      })
      await store.attachKey(planIds[plan], key.id)
      created.push({ plan, key: key.value })
    }
  }
  return {
    poolKey,
    created,
    fromEnv,
    others: enabledKeyIds().size - created.length - new Set(fromEnv.map((entry) => entry.id)).size,
    imported,
    file: store.file,
  }
}

/**
 * The local stage's counterpart of a deployed stage's stack outputs (the names are the API
 * stack's), so the keys CLI and the smoke test find a local stage as they find a deployed one.
 */
export const localOutputs = (store: ControlPlaneStore, baseUrl: string): Record<string, string> => {
  const outputs: Record<string, string> = {
    BaseUrl: baseUrl,
    RestApiId: LOCAL_API_STAGE.apiId,
    StageName: LOCAL_API_STAGE.stage,
  }
  for (const plan of PLAN_NAMES) {
    const name = `petstore-${LOCAL_STAGE_NAME}-${plan}`
    const found = store.usagePlans().find((candidate) => candidate.name === name)
    if (found) outputs[`${PLAN_DISPLAY_NAMES[plan]}UsagePlanId`] = found.id
  }
  return outputs
}
