import { shownArgument } from '#keys/key-value-mask.ts'
import { checkUsagePlanNumbers } from '#keys/usage-plan-numbers-config.ts'
import { ControlPlaneError } from './control-plane-error.ts'
import {
  apiKeyJson,
  badRequest,
  checkKinds,
  daysBetween,
  decodedLabel,
  objectOf,
  page,
  patchOperations,
  str,
  tagsOf,
  usagePlanJson,
  usagePlanKeyJson,
  utcDay,
} from './control-plane-json.ts'
import { type ControlPlaneStore, LOCAL_API_STAGE } from './control-plane-store.ts'

/** A control plane answer: its status and JSON body. */
export interface Answer {
  status: number
  body?: unknown
}

type Body = () => Promise<Record<string, unknown>>

/** One call of the management API: what every family of calls below reads. */
export interface ManagementCall {
  method: string
  /** The path's labels after `/_local/apigateway`: collection, id, sub-resource, its id, more. */
  segments: string[]
  query: URLSearchParams
  /** Reads the JSON body, when the call has one. */
  body: Body
}

/** What the management API needs besides the store (ControlPlaneHandlerOptions). */
export interface ManagementApiOptions {
  store: ControlPlaneStore
  flushAuthorizerCache: () => void
  usedToday: (keyValue: string) => number
  clock: () => number
}

/** CreateApiKey, GetApiKeys, GetApiKey, UpdateApiKey, DeleteApiKey. */
const apiKeyCalls = async (
  store: ControlPlaneStore,
  { method, segments: [, id], query, body }: ManagementCall,
): Promise<Answer | undefined> => {
  if (id === undefined && method === 'POST') {
    if (query.get('mode') === 'import') throw badRequest('ImportApiKeys is not emulated')
    const input = await body()
    checkKinds(input, {
      name: 'string',
      description: 'string',
      enabled: 'boolean',
      value: 'string',
      customerId: 'string',
      tags: 'object',
    })
    const key = await store.createApiKey({
      name: str(input.name),
      description: str(input.description),
      enabled: input.enabled === true,
      value: str(input.value),
      customerId: str(input.customerId),
      tags: tagsOf(input.tags),
    })
    return { status: 201, body: apiKeyJson(key, true) }
  }
  if (id === undefined && method === 'GET') {
    const name = query.get('name')
    const customerId = query.get('customerId')
    const keys = store
      .apiKeys()
      .filter((key) => name === null || key.name.startsWith(name))
      .filter((key) => customerId === null || key.customerId === customerId)
      .map((key) => apiKeyJson(key, query.get('includeValues') === 'true'))
    return { status: 200, body: page(keys, query) }
  }
  if (id !== undefined && method === 'GET') {
    return {
      status: 200,
      body: apiKeyJson(store.apiKey(id), query.get('includeValue') === 'true'),
    }
  }
  if (id !== undefined && method === 'PATCH') {
    const key = await store.updateApiKey(id, patchOperations(await body()))
    return { status: 200, body: apiKeyJson(key, false) }
  }
  if (id !== undefined && method === 'DELETE') {
    await store.deleteApiKey(id)
    return { status: 202 }
  }
  return undefined
}

/** CreateUsagePlan: its numbers checked as API Gateway checks them. */
const createUsagePlan = async (store: ControlPlaneStore, input: Record<string, unknown>) => {
  checkKinds(input, {
    name: 'string',
    description: 'string',
    apiStages: 'array',
    throttle: 'object',
    quota: 'object',
    tags: 'object',
  })
  const throttle = objectOf(input.throttle)
  const quota = objectOf(input.quota)
  const period = quota?.period ?? 'DAY'
  if (period !== 'DAY' && period !== 'WEEK' && period !== 'MONTH') {
    throw badRequest('Invalid quota period')
  }
  // Numbers as API Gateway reads them: a string, a fraction or 1e400 is refused, not coerced.
  const numbers = {
    rateLimit: throttle?.rateLimit ?? 0,
    burstLimit: throttle?.burstLimit ?? 0,
    quotaLimit: quota?.limit ?? 0,
    quotaOffset: quota?.offset ?? 0,
  }
  checkUsagePlanNumbers(numbers, badRequest)
  const plan = await store.createUsagePlan({
    name: str(input.name) ?? '',
    description: str(input.description),
    apiStages: Array.isArray(input.apiStages)
      ? input.apiStages.map((stage: unknown) => ({
          apiId: str(objectOf(stage)?.apiId) ?? '',
          stage: str(objectOf(stage)?.stage) ?? '',
        }))
      : [],
    throttle: throttle
      ? { rateLimit: numbers.rateLimit as number, burstLimit: numbers.burstLimit as number }
      : undefined,
    quota: quota
      ? { limit: numbers.quotaLimit as number, offset: numbers.quotaOffset as number, period }
      : undefined,
    tags: tagsOf(input.tags),
  })
  return { status: 201, body: usagePlanJson(plan) }
}

/** CreateUsagePlanKey, GetUsagePlanKeys, GetUsagePlanKey, DeleteUsagePlanKey. */
const usagePlanKeyCalls = async (
  store: ControlPlaneStore,
  id: string,
  { method, segments: [, , , subId], query, body }: ManagementCall,
): Promise<Answer | undefined> => {
  if (subId === undefined && method === 'POST') {
    const input = await body()
    if (str(input.keyType) !== 'API_KEY') throw badRequest('keyType must be API_KEY')
    const key = await store.attachKey(id, str(input.keyId) ?? '')
    return { status: 201, body: usagePlanKeyJson(key) }
  }
  if (subId === undefined && method === 'GET') {
    const name = query.get('name')
    const keys = store
      .planKeyIds(id)
      .map((keyId) => store.apiKey(keyId))
      .filter((key) => name === null || key.name.startsWith(name))
      .map(usagePlanKeyJson)
    return { status: 200, body: page(keys, query) }
  }
  if (subId !== undefined && method === 'GET') {
    if (!store.planKeyIds(id).includes(subId)) {
      throw new ControlPlaneError(
        404,
        'NotFoundException',
        'Invalid Usage Plan Key identifier specified',
      )
    }
    return { status: 200, body: usagePlanKeyJson(store.apiKey(subId)) }
  }
  if (subId !== undefined && method === 'DELETE') {
    await store.detachKey(id, subId)
    return { status: 202 }
  }
  return undefined
}

/** GetUsage: today's count from the local gateway, zero for other days (it keeps no history). */
const usage = (
  { store, clock, usedToday }: ManagementApiOptions,
  usagePlanId: string,
  query: URLSearchParams,
) => {
  const plan = store.usagePlan(usagePlanId)
  const days = daysBetween(query.get('startDate'), query.get('endDate'))
  const keyId = query.get('keyId')
  const today = utcDay(clock())
  const limit = plan.quota?.limit
  const values: Record<string, [number, number][]> = {}
  for (const id of store.planKeyIds(usagePlanId)) {
    if (keyId !== null && id !== keyId) continue
    const used = usedToday(store.apiKey(id).value)
    values[id] = days.map((day) => {
      const count = day === today ? used : 0
      return [count, limit === undefined ? 0 : Math.max(0, limit - count)]
    })
  }
  return {
    usagePlanId,
    startDate: days[0],
    endDate: days.at(-1),
    values,
  }
}

/** The usage plan calls, their keys and GetUsage. */
const usagePlanCalls = async (
  options: ManagementApiOptions,
  call: ManagementCall,
): Promise<Answer | undefined> => {
  const { store } = options
  const { method, query, body } = call
  const [, id, sub, subId, extra] = call.segments
  if (id === undefined && method === 'POST') return createUsagePlan(store, await body())
  if (id === undefined && method === 'GET') {
    const keyId = query.get('keyId')
    const plans = (keyId === null ? store.usagePlans() : store.plansOfKey(keyId)).map(usagePlanJson)
    return { status: 200, body: page(plans, query) }
  }
  if (id !== undefined && sub === undefined) {
    if (method === 'GET') return { status: 200, body: usagePlanJson(store.usagePlan(id)) }
    if (method === 'PATCH') {
      const plan = await store.updateUsagePlan(id, patchOperations(await body()))
      return { status: 200, body: usagePlanJson(plan) }
    }
    if (method === 'DELETE') {
      await store.deleteUsagePlan(id)
      return { status: 202 }
    }
  }
  if (id !== undefined && sub === 'keys' && extra === undefined) {
    return usagePlanKeyCalls(store, id, call)
  }
  if (id !== undefined && sub === 'usage' && subId === undefined && method === 'GET') {
    return { status: 200, body: usage(options, id, query) }
  }
  return undefined
}

/** GetTags, TagResource, UntagResource (the ARN is one path label). */
const tagCalls = async (
  store: ControlPlaneStore,
  id: string,
  { method, query, body }: ManagementCall,
): Promise<Answer | undefined> => {
  // The ARN is one path label: arn:aws:apigateway:{region}::/apikeys/{id}.
  const resource = decodedLabel(id).split('::')[1] ?? ''
  if (method === 'GET') return { status: 200, body: { tags: store.tagsOf(resource) } }
  if (method === 'PUT') {
    await store.tag(resource, tagsOf((await body()).tags) ?? {})
    return { status: 204 }
  }
  if (method === 'DELETE') {
    await store.untag(resource, query.getAll('tagKeys'))
    return { status: 204 }
  }
  return undefined
}

/** The part of API Gateway's management API this project uses, on the local store. */
export const managementApi =
  (options: ManagementApiOptions) =>
  async (call: ManagementCall): Promise<Answer> => {
    const { store } = options
    const { method, segments } = call
    const [collection, id, sub, subId, extra] = segments
    const answer =
      collection === 'apikeys' && sub === undefined
        ? await apiKeyCalls(store, call)
        : collection === 'usageplans'
          ? await usagePlanCalls(options, call)
          : collection === 'tags' && id !== undefined && sub === undefined
            ? await tagCalls(store, id, call)
            : undefined
    if (answer) return answer
    if (
      collection === 'restapis' &&
      sub === 'stages' &&
      extra === 'cache' &&
      segments[5] === 'authorizers' &&
      segments.length === 6 &&
      method === 'DELETE'
    ) {
      if (id !== LOCAL_API_STAGE.apiId || subId !== LOCAL_API_STAGE.stage) {
        throw new ControlPlaneError(404, 'NotFoundException', 'Invalid stage identifier specified')
      }
      options.flushAuthorizerCache()
      return { status: 202 }
    }
    throw new ControlPlaneError(
      404,
      'NotFoundException',
      `${method} /${segments.map(shownArgument).join('/')} is not part of the local control plane`,
    )
  }
