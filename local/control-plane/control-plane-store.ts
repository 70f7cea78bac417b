import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import * as z from 'zod/mini'
import { shownArgument } from '#keys/key-value-mask.ts'
import { IN_MEMORY } from '#keys/local-control-config.ts'
import { checkUsagePlanNumbers } from '#keys/usage-plan-numbers-config.ts'
import { secretDigest } from '#local/gateway/secret-digest.ts'
import type { Clock } from '#shared/time/clock.ts'
import { ControlPlaneError } from './control-plane-error.ts'
import { parseJsonFile } from './json-error-locator.ts'
import { LocalConfigError } from './local-config-error.ts'

/**
 * The local control plane's state: API Gateway's API keys, usage plans (with their tags and
 * stages) and usage-plan keys, as the management API reads and changes them. Kept in
 * `<PETSTORE_DATA_DIR>/control-plane.json` (owner-only, written whole or not at all), or in memory
 * with `:memory:`. Only the local server writes it; `npm run keys` goes through the API.
 */
export const CONTROL_PLANE_FILE = 'control-plane.json'

/** The local REST API and stage, as the local gateway names them in its authorizer events. */
export const LOCAL_API_STAGE = { apiId: 'local', stage: 'local' } as const

/**
 * API Gateway's own ceilings ("Quotas for configuring and running a REST API in API Gateway",
 * AWS docs): 10,000 API keys per account and Region (not adjustable), 300 usage plans (adjustable).
 */
export const API_GATEWAY_CEILINGS = { apiKeys: 10_000, usagePlans: 300 } as const

/** API Gateway key values: 20 to 128 characters (the bearer grammar in shared/auth narrows it). */
const KEY_VALUE = /^[\x21-\x7e]{20,128}$/

const TagsSchema = z.record(z.string(), z.string())

const ApiKeySchema = z.object({
  id: z.string().check(z.regex(/^[a-z0-9]{1,64}$/)),
  name: z.string(),
  description: z.optional(z.string()),
  value: z.string().check(z.regex(KEY_VALUE)),
  enabled: z.boolean(),
  /** Milliseconds since the epoch. */
  createdDate: z.int(),
  lastUpdatedDate: z.int(),
  customerId: z.optional(z.string()),
  tags: z.record(z.string(), z.string()),
})

const UsagePlanSchema = z.object({
  id: z.string().check(z.regex(/^[a-z0-9]{1,64}$/)),
  name: z.string(),
  description: z.optional(z.string()),
  apiStages: z.array(z.object({ apiId: z.string(), stage: z.string() })),
  throttle: z.optional(z.object({ rateLimit: z.number(), burstLimit: z.int() })),
  quota: z.optional(
    z.object({ limit: z.int(), offset: z.int(), period: z.enum(['DAY', 'WEEK', 'MONTH']) }),
  ),
  tags: z.record(z.string(), z.string()),
})

const StateSchema = z.object({
  version: z.literal(1),
  apiKeys: z.array(ApiKeySchema),
  usagePlans: z.array(UsagePlanSchema),
  usagePlanKeys: z.array(z.object({ usagePlanId: z.string(), keyId: z.string() })),
})

export type StoredApiKey = z.infer<typeof ApiKeySchema>
export type StoredUsagePlan = z.infer<typeof UsagePlanSchema>
export type ApiStage = StoredUsagePlan['apiStages'][number]
type State = z.infer<typeof StateSchema>

/**
 * A control-plane file that cannot be used: named with the place it goes wrong (line and column,
 * or the field's path), never with what it holds, since any part of it may be a key.
 */
export class ControlPlaneFileError extends LocalConfigError {
  override name = 'ControlPlaneFileError'
}

const notFound = (what: string) =>
  new ControlPlaneError(404, 'NotFoundException', `Invalid ${what} identifier specified`)
const badRequest = (message: string) => new ControlPlaneError(400, 'BadRequestException', message)

/** Ids as API Gateway makes them: lowercase letters and digits. */
const newId = (length: number): string => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  return [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join('')
}

/** API Gateway generates 40 alphanumeric characters when no value is given. */
export const generateKeyValue = (): string => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  return [...randomBytes(40)].map((byte) => alphabet[byte % alphabet.length]).join('')
}

/** The state of a file's text, or a ControlPlaneFileError that quotes none of it. */
export const parseControlPlaneFile = (text: string, path: string): State => {
  const parsed = parseJsonFile(text, path, (message) => new ControlPlaneFileError(message))
  const result = StateSchema.safeParse(parsed)
  if (result.success) return result.data
  // The path of the first problem only: zod's messages and inputs may echo a value.
  const issue = result.error.issues[0]
  const at = (issue?.path ?? [])
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '')
  throw new ControlPlaneFileError(
    at
      ? `${path}: ${at} is missing or not valid`
      : `${path} must hold a JSON object with "version": 1, "apiKeys", "usagePlans" and "usagePlanKeys"`,
  )
}

const emptyState = (): State => ({ version: 1, apiKeys: [], usagePlans: [], usagePlanKeys: [] })

export interface CreateApiKeyInput {
  name?: string | undefined
  description?: string | undefined
  enabled?: boolean | undefined
  value?: string | undefined
  customerId?: string | undefined
  tags?: Record<string, string> | undefined
  createdDate?: number | undefined
}

export interface CreateUsagePlanInput {
  name: string
  description?: string | undefined
  apiStages?: ApiStage[] | undefined
  throttle?: StoredUsagePlan['throttle']
  quota?: StoredUsagePlan['quota']
  tags?: Record<string, string> | undefined
}

/** One JSON Patch-like operation of UpdateApiKey and UpdateUsagePlan. */
export interface PatchOperation {
  op?: string | undefined
  path?: string | undefined
  value?: string | undefined
}

export interface ControlPlaneStoreOptions {
  /** The file, or undefined to keep everything in memory. */
  file: string | undefined
  clock: Clock
}

/**
 * The state and every change the management API makes to it, with API Gateway's rules where
 * this project meets them: unique key values, a key on at most one usage plan per API stage,
 * a key or plan that does not exist answers NotFound, and the account ceilings. A change is
 * saved before its call returns, so an answered call survives a restart.
 */
export class ControlPlaneStore {
  readonly file: string | undefined
  readonly #clock: Clock
  /** Whole milliseconds, as the file keeps dates (a test's clock may have fractions). */
  #now = () => Math.floor(this.#clock())
  /**
   * Called after every change is saved, with the plan and key ids the request named (as the
   * change's CloudTrail event names them on AWS): the local key sync's trigger.
   */
  onChange: (ids: readonly string[]) => void = () => undefined
  #state: State
  #saving: Promise<void> = Promise.resolve()
  /** Keys by value, kept as keys come and go: a scan per create made 10,000 creates quadratic. */
  #byValue: Map<string, StoredApiKey>

  private constructor(state: State, { file, clock }: ControlPlaneStoreOptions) {
    this.#state = state
    this.#byValue = new Map(state.apiKeys.map((key) => [key.value, key]))
    this.file = file
    this.#clock = clock
  }

  /** Reads the file of a data directory (a missing file is an empty control plane). */
  static async open(
    dataDir: string,
    options: Omit<ControlPlaneStoreOptions, 'file'>,
  ): Promise<ControlPlaneStore> {
    if (dataDir === IN_MEMORY)
      return new ControlPlaneStore(emptyState(), { ...options, file: undefined })
    const file = join(dataDir, CONTROL_PLANE_FILE)
    let text: string | undefined
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'ENOENT') {
        throw new ControlPlaneFileError(`${file} cannot be read (${code ?? 'unknown error'})`)
      }
    }
    const state = text === undefined ? emptyState() : parseControlPlaneFile(text, file)
    return new ControlPlaneStore(state, { ...options, file })
  }

  apiKeys(): readonly StoredApiKey[] {
    return this.#state.apiKeys
  }

  usagePlans(): readonly StoredUsagePlan[] {
    return this.#state.usagePlans
  }

  apiKey(id: string): StoredApiKey {
    const key = this.#state.apiKeys.find((candidate) => candidate.id === id)
    if (!key) throw notFound('API Key')
    return key
  }

  apiKeyByValue(value: string): StoredApiKey | undefined {
    return this.#byValue.get(value)
  }

  /** Keys by the SHA-256 of their value, rebuilt after a change: the gateway's lookup per request. */
  #byDigest: Map<string, StoredApiKey> | undefined

  /** The key whose value has this SHA-256 (secretDigest), as the gateway meters it. */
  apiKeyByDigest(digest: string): StoredApiKey | undefined {
    this.#byDigest ??= new Map(this.#state.apiKeys.map((key) => [secretDigest(key.value), key]))
    return this.#byDigest.get(digest)
  }

  usagePlan(id: string): StoredUsagePlan {
    const plan = this.#state.usagePlans.find((candidate) => candidate.id === id)
    if (!plan) throw notFound('Usage Plan')
    return plan
  }

  /** Ids of the keys attached to a usage plan, in the order they were attached. */
  planKeyIds(usagePlanId: string): string[] {
    this.usagePlan(usagePlanId)
    return this.#state.usagePlanKeys
      .filter((entry) => entry.usagePlanId === usagePlanId)
      .map((entry) => entry.keyId)
  }

  /** The usage plans a key is attached to. */
  plansOfKey(keyId: string): StoredUsagePlan[] {
    const ids = new Set(
      this.#state.usagePlanKeys.filter((entry) => entry.keyId === keyId).map((e) => e.usagePlanId),
    )
    return this.#state.usagePlans.filter((plan) => ids.has(plan.id))
  }

  async createApiKey(input: CreateApiKeyInput): Promise<StoredApiKey> {
    if (this.#state.apiKeys.length >= API_GATEWAY_CEILINGS.apiKeys) {
      throw new ControlPlaneError(429, 'LimitExceededException', 'API Key limit exceeded')
    }
    const value = input.value ?? generateKeyValue()
    if (!KEY_VALUE.test(value)) {
      throw badRequest('API Key value must be 20 to 128 printable characters')
    }
    if (this.apiKeyByValue(value)) {
      throw new ControlPlaneError(409, 'ConflictException', 'API Key value already exists')
    }
    const now = input.createdDate ?? this.#now()
    const key: StoredApiKey = {
      id: newId(10),
      name: input.name ?? '',
      ...(input.description !== undefined ? { description: input.description } : {}),
      value,
      enabled: input.enabled === true,
      createdDate: now,
      lastUpdatedDate: now,
      ...(input.customerId !== undefined ? { customerId: input.customerId } : {}),
      tags: { ...input.tags },
    }
    this.#state.apiKeys.push(readable(ApiKeySchema, key))
    this.#byValue.set(value, key)
    await this.#changed()
    return key
  }

  /** UpdateApiKey: `replace` of /enabled, /name, /description or /customerId. */
  async updateApiKey(id: string, operations: PatchOperation[]): Promise<StoredApiKey> {
    const key = this.apiKey(id)
    const next = { ...key }
    for (const { op, path, value } of operations) {
      if (op !== 'replace')
        throw badRequest(`Invalid patch operation ${shownArgument(op ?? '')} for API Key`)
      if (path === '/enabled') {
        if (value !== 'true' && value !== 'false') throw badRequest('Invalid value for /enabled')
        next.enabled = value === 'true'
      } else if (path === '/name' && value !== undefined) next.name = value
      else if (path === '/description' && value !== undefined) next.description = value
      else if (path === '/customerId' && value !== undefined) next.customerId = value
      else throw badRequest(`Invalid patch path ${shownArgument(path ?? '')} for API Key`)
    }
    next.lastUpdatedDate = this.#now()
    Object.assign(key, readable(ApiKeySchema, next))
    await this.#changed([id])
    return key
  }

  /** DeleteApiKey: the key goes, and with it its place on every usage plan. */
  async deleteApiKey(id: string): Promise<void> {
    this.#byValue.delete(this.apiKey(id).value)
    this.#state.apiKeys = this.#state.apiKeys.filter((key) => key.id !== id)
    this.#state.usagePlanKeys = this.#state.usagePlanKeys.filter((entry) => entry.keyId !== id)
    await this.#changed([id])
  }

  async createUsagePlan(input: CreateUsagePlanInput): Promise<StoredUsagePlan> {
    if (this.#state.usagePlans.length >= API_GATEWAY_CEILINGS.usagePlans) {
      throw new ControlPlaneError(429, 'LimitExceededException', 'Usage Plan limit exceeded')
    }
    if (!input.name) throw badRequest('Usage Plan name is required')
    checkPlanNumbers(input)
    const plan: StoredUsagePlan = {
      id: newId(6),
      name: input.name,
      ...(input.description !== undefined ? { description: input.description } : {}),
      apiStages: [...(input.apiStages ?? [])],
      ...(input.throttle ? { throttle: { ...input.throttle } } : {}),
      ...(input.quota ? { quota: { ...input.quota } } : {}),
      tags: { ...input.tags },
    }
    this.#state.usagePlans.push(readable(UsagePlanSchema, plan))
    await this.#changed()
    return plan
  }

  /**
   * UpdateUsagePlan: `replace` of /name, /description, /throttle/rateLimit, /throttle/burstLimit,
   * /quota/limit, /quota/period; `add` and `remove` of /apiStages (value `apiId:stage`).
   */
  async updateUsagePlan(id: string, operations: PatchOperation[]): Promise<StoredUsagePlan> {
    const plan = this.usagePlan(id)
    const next: StoredUsagePlan = structuredClone(plan)
    // API Gateway reads a patch's value as the field's type: checked below, never truncated.
    const number = (value: string | undefined) => {
      if (value === undefined || value.trim() === '')
        throw badRequest('Invalid number in patch operation')
      return Number(value)
    }
    for (const { op, path, value } of operations) {
      if (path === '/apiStages' && (op === 'add' || op === 'remove')) {
        const [apiId, stage] = (value ?? '').split(':')
        if (!apiId || !stage) throw badRequest('Invalid API stage, expected apiId:stage')
        next.apiStages = next.apiStages.filter((s) => s.apiId !== apiId || s.stage !== stage)
        if (op === 'add') next.apiStages.push({ apiId, stage })
        continue
      }
      if (op !== 'replace')
        throw badRequest(`Invalid patch operation ${shownArgument(op ?? '')} for Usage Plan`)
      // A plan without a throttle or quota gets one when a patch sets part of it.
      const throttle = () => {
        next.throttle ??= { rateLimit: 0, burstLimit: 0 }
        return next.throttle
      }
      const quota = () => {
        next.quota ??= { limit: 0, offset: 0, period: 'DAY' }
        return next.quota
      }
      if (path === '/name' && value) next.name = value
      else if (path === '/description' && value !== undefined) next.description = value
      else if (path === '/throttle/rateLimit') throttle().rateLimit = number(value)
      else if (path === '/throttle/burstLimit') throttle().burstLimit = number(value)
      else if (path === '/quota/limit') quota().limit = number(value)
      else if (
        path === '/quota/period' &&
        (value === 'DAY' || value === 'WEEK' || value === 'MONTH')
      )
        quota().period = value
      else throw badRequest(`Invalid patch path ${shownArgument(path ?? '')} for Usage Plan`)
    }
    checkPlanNumbers(next)
    Object.assign(plan, readable(UsagePlanSchema, next))
    await this.#changed([id])
    return plan
  }

  async deleteUsagePlan(id: string): Promise<void> {
    this.usagePlan(id)
    this.#state.usagePlans = this.#state.usagePlans.filter((plan) => plan.id !== id)
    this.#state.usagePlanKeys = this.#state.usagePlanKeys.filter((e) => e.usagePlanId !== id)
    await this.#changed([id])
  }

  /**
   * CreateUsagePlanKey. API Gateway allows a key on one usage plan per API stage ("Create and
   * configure API keys and usage plans", AWS docs): attaching it to a second plan that shares a
   * stage with the first is a conflict, as is attaching it twice.
   */
  async attachKey(usagePlanId: string, keyId: string): Promise<StoredApiKey> {
    const plan = this.usagePlan(usagePlanId)
    const key = this.apiKey(keyId)
    for (const other of this.plansOfKey(keyId)) {
      if (other.id === usagePlanId) {
        throw new ControlPlaneError(409, 'ConflictException', 'Usage Plan Key already exists')
      }
      const shared = other.apiStages.some((stage) =>
        plan.apiStages.some((mine) => mine.apiId === stage.apiId && mine.stage === stage.stage),
      )
      if (shared) {
        throw new ControlPlaneError(
          409,
          'ConflictException',
          `API Key ${keyId} already belongs to usage plan ${other.id} on a stage of this plan`,
        )
      }
    }
    this.#state.usagePlanKeys.push({ usagePlanId, keyId })
    await this.#changed([usagePlanId, keyId])
    return key
  }

  async detachKey(usagePlanId: string, keyId: string): Promise<void> {
    if (!this.planKeyIds(usagePlanId).includes(keyId)) throw notFound('Usage Plan Key')
    this.#state.usagePlanKeys = this.#state.usagePlanKeys.filter(
      (entry) => entry.usagePlanId !== usagePlanId || entry.keyId !== keyId,
    )
    await this.#changed([usagePlanId, keyId])
  }

  /** TagResource on an API key or usage plan (`/apikeys/{id}` or `/usageplans/{id}`). */
  async tag(resource: string, tags: Record<string, string>): Promise<void> {
    const target = this.#taggable(resource)
    target.tags = readable(TagsSchema, { ...target.tags, ...tags })
    await this.#changed([idOf(resource)])
  }

  async untag(resource: string, keys: string[]): Promise<void> {
    const target = this.#taggable(resource)
    target.tags = Object.fromEntries(Object.entries(target.tags).filter(([k]) => !keys.includes(k)))
    await this.#changed([idOf(resource)])
  }

  tagsOf(resource: string): Record<string, string> {
    return { ...this.#taggable(resource).tags }
  }

  #taggable(resource: string): { tags: Record<string, string> } {
    const match = /^\/(apikeys|usageplans)\/([^/]+)$/.exec(resource)
    if (!match?.[2]) throw notFound('resource')
    return match[1] === 'apikeys' ? this.apiKey(match[2]) : this.usagePlan(match[2])
  }

  /** Saves, then tells the owner: a sync started by the change reads the saved state. */
  async #changed(ids: readonly string[] = []): Promise<void> {
    this.#byDigest = undefined
    const file = this.file
    if (file) {
      const text = `${JSON.stringify(this.#state, null, 2)}\n`
      this.#saving = this.#saving.then(() => writeWhole(file, text))
      await this.#saving
    }
    this.onChange(ids)
  }
}

/** The id in a tagged resource's path (`/apikeys/<id>`, `/usageplans/<id>`). */
const idOf = (resource: string): string => resource.slice(resource.lastIndexOf('/') + 1)

/**
 * A record as the file's reader would read it back, or a 400: nothing the next start would stop
 * on is ever saved. Checked before the change is made, so a refused change leaves nothing behind.
 */
const readable = <T>(schema: z.ZodMiniType<T>, record: T): T => {
  const result = schema.safeParse(JSON.parse(JSON.stringify(record)))
  if (!result.success) {
    const at = result.error.issues[0]?.path.map(String).join('.') ?? ''
    throw badRequest(`Invalid ${at || 'value'}: the control plane could not read it back`)
  }
  return record
}

/** A plan's numbers as API Gateway accepts them (int32 burst and quota, a finite rate). */
const checkPlanNumbers = ({ throttle, quota }: Pick<StoredUsagePlan, 'throttle' | 'quota'>) =>
  checkUsagePlanNumbers(
    {
      rateLimit: throttle?.rateLimit,
      burstLimit: throttle?.burstLimit,
      quotaLimit: quota?.limit,
      quotaOffset: quota?.offset,
    },
    badRequest,
  )

/** Written aside and renamed into place, owner-only: a reader never sees half a file. */
const writeWhole = async (file: string, text: string): Promise<void> => {
  await mkdir(dirname(file), { recursive: true })
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    const handle = await open(aside, 'wx', 0o600)
    try {
      await handle.writeFile(text)
      // On disk before the rename makes it the file: a power cut leaves the old file or the new.
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(aside, file)
  } finally {
    await rm(aside, { force: true })
  }
}
