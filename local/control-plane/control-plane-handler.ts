import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { shownArgument } from '#shared/auth/key-value-mask.ts'
import { LOCAL_CONTROL_PREFIX, MANAGEMENT_API_PATH } from '#shared/config/local-control-config.ts'
import { checkUsagePlanNumbers } from '#shared/config/usage-plan-numbers-config.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { controlPlaneRefusal } from './control-plane-guard.ts'
import {
  ControlPlaneError,
  type ControlPlaneStore,
  LOCAL_API_STAGE,
  type PatchOperation,
  type StoredApiKey,
  type StoredUsagePlan,
} from './control-plane-store.ts'

/**
 * The local server's control paths, beside the API under `/v1` and never reachable from another
 * machine: the part of API Gateway's management API this project uses, at
 * `/_local/apigateway` (an APIGatewayClient with `endpoint: <origin>/_local/apigateway`, any
 * region and dummy credentials works unchanged), and three local stand-ins for what a deployed
 * stage offers otherwise:
 * - `GET /_local/outputs`: the stage's "stack outputs" (BaseUrl, RestApiId, <Plan>UsagePlanId...);
 * - `POST /_local/key-sync`: a key sync run, as invoking the key-sync function does on AWS;
 * - `GET /_local/key-mirror/{keyHash}`: the mirror item of a key hash, as a GetItem would read it;
 * - `POST /_local/key-usage`: the rate limiter's usage and suspensions, as the keys CLI reads (and
 *   lifts) them in a deployed stage's table (shared/rate-limit/key-usage-requests.ts).
 */
export { MANAGEMENT_API_PATH }

export interface ControlPlaneHandlerOptions {
  store: ControlPlaneStore
  /** FlushStageAuthorizersCache of the local stage: clears the local gateway's cache. */
  flushAuthorizerCache: () => void
  /** Requests the local gateway let through today for a key value (GetUsage). */
  usedToday: (keyValue: string) => number
  /** Runs a key sync that starts after this call (undefined until the server listens). */
  runKeySync: () => Promise<KeySyncResult>
  mirrorItem: (keyHash: string) => Promise<KeyMirrorItem | undefined>
  /** `POST /_local/key-usage`: the rate limiter's counts and suspensions (key-usage-requests.ts). */
  keyUsage?: (body: Record<string, unknown>) => Promise<unknown>
  outputs: () => Record<string, string>
  clock: () => number
  /** What every request that reads or changes keys must carry (control-plane-secret.ts). */
  secret: string
  onError?: (message: string, error: unknown) => void
}

/** Loopback only: a server started with HOST=0.0.0.0 must not hand out keys to the network. */
export const isLoopback = (address: string | undefined): boolean =>
  address !== undefined &&
  (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'))

/**
 * The server's one request listener: control paths from loopback go to the control plane,
 * everything else (another machine's request for them included) to the gateway, which answers
 * what it does not route with 404 route_not_found.
 */
export const withControlPaths =
  (control: RequestListener, gateway: RequestListener): RequestListener =>
  (req, res) => {
    const isControl = (req.url ?? '').startsWith(`${LOCAL_CONTROL_PREFIX}/`)
    return isControl && isLoopback(req.socket.remoteAddress) ? control(req, res) : gateway(req, res)
  }

const MAX_BODY_BYTES = 1024 * 1024
const MAX_PAGE = 500
const DEFAULT_PAGE = 25
const MAX_USAGE_DAYS = 90

const seconds = (ms: number) => ms / 1000

/** An ApiKey as the management API renders it (dates in epoch seconds, restJson's default). */
const apiKeyJson = (key: StoredApiKey, includeValue: boolean) => ({
  id: key.id,
  name: key.name,
  ...(key.description !== undefined ? { description: key.description } : {}),
  enabled: key.enabled,
  createdDate: seconds(key.createdDate),
  lastUpdatedDate: seconds(key.lastUpdatedDate),
  ...(key.customerId !== undefined ? { customerId: key.customerId } : {}),
  stageKeys: [],
  tags: key.tags,
  ...(includeValue ? { value: key.value } : {}),
})

const usagePlanJson = (plan: StoredUsagePlan) => ({
  id: plan.id,
  name: plan.name,
  ...(plan.description !== undefined ? { description: plan.description } : {}),
  apiStages: plan.apiStages,
  ...(plan.throttle ? { throttle: plan.throttle } : {}),
  ...(plan.quota ? { quota: plan.quota } : {}),
  tags: plan.tags,
})

const usagePlanKeyJson = (key: StoredApiKey) => ({ id: key.id, type: 'API_KEY', name: key.name })

/** One page of a listing: API Gateway's `item` list and an opaque `position`. */
const page = <T>(items: T[], query: URLSearchParams) => {
  const limit = Math.min(Number(query.get('limit')) || DEFAULT_PAGE, MAX_PAGE)
  const position = query.get('position')
  if (position !== null && !/^\d+$/.test(position)) throw badRequest('Invalid position')
  const start = position === null ? 0 : Number(position)
  const end = start + limit
  return { item: items.slice(start, end), ...(end < items.length ? { position: String(end) } : {}) }
}

const badRequest = (message: string) => new ControlPlaneError(400, 'BadRequestException', message)

const readJson = (req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown>> =>
  new Promise((resolve, reject) => {
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue()
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) chunks.push(chunk)
    })
    req.on('error', reject)
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return reject(badRequest('Request body too large'))
      const text = Buffer.concat(chunks).toString('utf8')
      if (text.trim() === '') return resolve({})
      try {
        const parsed: unknown = JSON.parse(text)
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          return reject(badRequest('Request body must be a JSON object'))
        }
        resolve(parsed as Record<string, unknown>)
      } catch {
        reject(badRequest('Request body is not valid JSON'))
      }
    })
  })

const send = (res: ServerResponse, status: number, body?: unknown, type?: string) => {
  const text = body === undefined ? '' : JSON.stringify(body)
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json')
  if (type) res.setHeader('x-amzn-ErrorType', type)
  res.setHeader('Content-Length', Buffer.byteLength(text))
  res.end(text)
}

/**
 * A refusal in the Error body (`code`, `message`, `status`), the code being the exception API
 * Gateway names in `x-amzn-ErrorType`, which the AWS SDKs read.
 */
const sendError = (res: ServerResponse, error: ControlPlaneError) =>
  send(
    res,
    error.status,
    { code: error.type, message: error.message, status: error.status },
    error.type,
  )

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)
type Kind = 'string' | 'boolean' | 'object' | 'array'
/**
 * Fields of the wrong JSON type are refused, as API Gateway refuses a body it cannot deserialize
 * (400), rather than read as absent.
 */
const checkKinds = (input: Record<string, unknown>, kinds: Record<string, Kind>): void => {
  for (const [field, kind] of Object.entries(kinds)) {
    const value = input[field]
    if (value === undefined || value === null) continue
    const actual = Array.isArray(value) ? 'array' : typeof value
    if (actual !== kind) throw badRequest(`${field} must be a JSON ${kind}`)
  }
}

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
const tagsOf = (value: unknown): Record<string, string> | undefined =>
  value && typeof value === 'object'
    ? Object.fromEntries(
        Object.entries(value as Record<string, unknown>).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string',
        ),
      )
    : undefined
const patchOperations = (body: Record<string, unknown>): PatchOperation[] =>
  Array.isArray(body.patchOperations)
    ? body.patchOperations.map((operation: unknown) => ({
        op: str(objectOf(operation)?.op),
        path: str(objectOf(operation)?.path),
        value: str(objectOf(operation)?.value),
      }))
    : []

/** A path label as its percent-escapes say; a malformed escape is the caller's mistake (400). */
const decodedLabel = (label: string): string => {
  try {
    return decodeURIComponent(label)
  } catch {
    throw badRequest('Invalid percent-encoding in the path')
  }
}

const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10)

/** Every UTC day from start to end (YYYY-MM-DD, both included). */
const daysBetween = (start: string | null, end: string | null): string[] => {
  const day = /^\d{4}-\d{2}-\d{2}$/
  if (!start || !end || !day.test(start) || !day.test(end) || start > end) {
    throw badRequest('startDate and endDate must be YYYY-MM-DD, startDate first')
  }
  const days: string[] = []
  for (let at = Date.parse(`${start}T00:00:00Z`); utcDay(at) <= end; at += 86_400_000) {
    days.push(utcDay(at))
    if (days.length > MAX_USAGE_DAYS) throw badRequest(`At most ${MAX_USAGE_DAYS} days of usage`)
  }
  return days
}

export const createControlPlaneHandler = (options: ControlPlaneHandlerOptions): RequestListener => {
  const { store } = options

  const managementApi = async (
    method: string,
    segments: string[],
    query: URLSearchParams,
    body: () => Promise<Record<string, unknown>>,
  ): Promise<{ status: number; body?: unknown }> => {
    const [collection, id, sub, subId, extra] = segments
    if (collection === 'apikeys' && sub === undefined) {
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
    }
    if (collection === 'usageplans') {
      if (id === undefined && method === 'POST') {
        const input = await body()
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
      if (id === undefined && method === 'GET') {
        const keyId = query.get('keyId')
        const plans = (keyId === null ? store.usagePlans() : store.plansOfKey(keyId)).map(
          usagePlanJson,
        )
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
      }
      if (id !== undefined && sub === 'usage' && subId === undefined && method === 'GET') {
        return { status: 200, body: usage(id, query) }
      }
    }
    if (collection === 'tags' && id !== undefined && sub === undefined) {
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
    }
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

  /** GetUsage: today's count from the local gateway, zero for other days (it keeps no history). */
  const usage = (usagePlanId: string, query: URLSearchParams) => {
    const plan = store.usagePlan(usagePlanId)
    const days = daysBetween(query.get('startDate'), query.get('endDate'))
    const keyId = query.get('keyId')
    const today = utcDay(options.clock())
    const limit = plan.quota?.limit
    const values: Record<string, [number, number][]> = {}
    for (const id of store.planKeyIds(usagePlanId)) {
      if (keyId !== null && id !== keyId) continue
      const used = options.usedToday(store.apiKey(id).value)
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

  const local = async (
    method: string,
    segments: string[],
    body: () => Promise<Record<string, unknown>>,
  ): Promise<{ status: number; body?: unknown }> => {
    const [name, id] = segments
    if (name === 'key-usage' && method === 'POST' && id === undefined && options.keyUsage) {
      return { status: 200, body: await options.keyUsage(await body()) }
    }
    if (name === 'outputs' && method === 'GET' && id === undefined) {
      return { status: 200, body: options.outputs() }
    }
    if (name === 'key-sync' && method === 'POST' && id === undefined) {
      return { status: 200, body: await options.runKeySync() }
    }
    if (name === 'key-mirror' && method === 'GET' && id !== undefined && segments.length === 2) {
      const item = await options.mirrorItem(id)
      if (!item) throw new ControlPlaneError(404, 'NotFoundException', 'Not in the key mirror')
      return { status: 200, body: item }
    }
    throw new ControlPlaneError(404, 'NotFoundException', 'Unknown local control path')
  }

  return (req, res) => {
    const refusal = controlPlaneRefusal(req, options.secret)
    if (refusal) {
      // Nothing of the request is read; the connection closes so an unread body cannot linger.
      res.setHeader('Connection', 'close')
      sendError(res, refusal)
      req.resume()
      return
    }
    const url = URL.parse(req.url ?? '/', 'http://local')
    const method = (req.method ?? 'GET').toUpperCase()
    const segments = (url?.pathname ?? '')
      .slice(LOCAL_CONTROL_PREFIX.length + 1)
      .split('/')
      .filter((segment) => segment.length > 0)
    const body = () => readJson(req, res)
    const answer =
      segments[0] === 'apigateway'
        ? managementApi(method, segments.slice(1), url?.searchParams ?? new URLSearchParams(), body)
        : local(method, segments, body)
    answer.then(
      (result) => {
        // Drain an unread body so the connection stays usable.
        req.resume()
        send(res, result.status, result.body)
      },
      (error: unknown) => {
        req.resume()
        if (error instanceof ControlPlaneError) {
          sendError(res, error)
          return
        }
        options.onError?.('Local control plane failed', error)
        send(
          res,
          500,
          { code: 'InternalFailure', message: 'Internal error', status: 500 },
          'InternalFailure',
        )
      },
    )
  }
}
