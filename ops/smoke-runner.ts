import { randomBytes } from 'node:crypto'
import {
  contractViolations,
  DOCUMENTED_OPERATIONS,
  type ObservedResponse,
  operationIdOf,
} from '#openapi/contract-validator.ts'
import { createPetstoreClient, type Pet } from '#openapi/petstore-client.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { OperationId } from '#shared/config/routes-config.ts'

/**
 * The smoke test of a running stage (`npm run smoke`): with a temporary key (made and revoked
 * with the keys CLI's own operations) or a given one, it calls every operation with the typed
 * client (and fails when one of openapi/openapi.json was not called), checks every answer against
 * that document (ajv, independent of the zod schemas the document comes from), a 401, the
 * rate-limit headers and, for its own key, that a revoked key is refused. It creates one pet per
 * run, without a status, so the pet shows in no status-filtered list.
 */

export interface SmokeKeys {
  create(): Promise<{ id: string; value: string; limits: PlanLimits }>
  revoke(id: string): Promise<void>
}

export interface SmokeOptions {
  /** Ends in /v1. */
  baseUrl: string
  /** A key to use as it is (no temporary key, no revocation check). */
  key?: string | undefined
  /** Where the temporary key comes from when no key is given. */
  keys?: SmokeKeys | undefined
  /** Receives each line of the report. */
  report: (line: string) => void
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
  now?: () => number
  /** How long a new key may take to work (the keys CLI already waited for the mirror). */
  keyWaitMs?: number
}

export interface SmokeResult {
  passed: number
  failed: number
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A key no stage has: well-formed, so the gateway's authorizer (not its pattern) refuses it. */
const unknownKey = () => `smoke-unknown-${randomBytes(16).toString('hex')}`

const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
]

const expectStatus = (response: ObservedResponse | undefined, status: number, what: string) => {
  if (!response) throw new Error(`${what}: no answer`)
  if (response.status !== status) {
    throw new Error(
      `${what} answered ${response.status}, expected ${status}: ${response.text.slice(0, 200)}`,
    )
  }
  return response
}

export const runSmoke = async (options: SmokeOptions): Promise<SmokeResult> => {
  const fetchImpl = options.fetch ?? fetch
  const sleep = options.sleep ?? defaultSleep
  const now = options.now ?? Date.now
  const result: SmokeResult = { passed: 0, failed: 0 }
  /** Every answer of the run, in order, with the contract problems it has. */
  const answers: { response: ObservedResponse; problems: string[] }[] = []

  const recordingFetch = async (input: Request | string, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const response = await fetchImpl(request)
    const text = await response.clone().text()
    const observed = {
      method: request.method,
      url: request.url,
      status: response.status,
      headers: response.headers,
      text,
    }
    answers.push({ response: observed, problems: contractViolations(observed) })
    return response
  }

  /** One check: its answers must keep the contract, and `run` must not throw. */
  const check = async (name: string, run: () => Promise<string>): Promise<boolean> => {
    const from = answers.length
    try {
      const detail = await run()
      const problems = answers.slice(from).flatMap(({ problems }) => problems)
      if (problems.length > 0)
        throw new Error(`broke the contract:\n        - ${problems.join('\n        - ')}`)
      result.passed += 1
      options.report(`  ok    ${name}: ${detail}`)
      return true
    } catch (error) {
      result.failed += 1
      options.report(`  FAIL  ${name}: ${(error as Error).message}`)
      return false
    }
  }

  options.report(`smoke test of ${options.baseUrl}`)
  let key = options.key
  let limits: PlanLimits | undefined
  let temporaryId: string | undefined
  if (key === undefined) {
    const made = await check('temporary key', async () => {
      if (!options.keys) throw new Error('no key given and no way to make one')
      const created = await options.keys.create()
      key = created.value
      limits = created.limits
      temporaryId = created.id
      return `${created.id} (${created.limits.perMinute}/minute, ${created.limits.perDay}/day)`
    })
    if (!made) return result
  }
  const apiKey = key as string
  const raw = (path: string, authorization?: string) =>
    recordingFetch(`${options.baseUrl}${path}`, {
      headers: authorization === undefined ? {} : { Authorization: authorization },
    })

  try {
    await check('the key works', async () => {
      const started = now()
      for (;;) {
        const response = await raw('/pets?limit=1', `Bearer ${apiKey}`)
        await response.arrayBuffer()
        if (response.status === 200) return `200 after ${((now() - started) / 1000).toFixed(1)} s`
        if (response.status !== 401 || now() - started >= (options.keyWaitMs ?? 30_000)) {
          throw new Error(`GET /pets answered ${response.status}`)
        }
        await sleep(1_000)
      }
    })

    // The typed client, one attempt per call: the smoke test reports what the stage answers.
    const client = createPetstoreClient({
      baseUrl: options.baseUrl,
      apiKey,
      maxAttempts: 1,
      fetch: (request) => recordingFetch(request),
    })
    const name = `smoke test ${new Date(now()).toISOString()}`
    let pet: Pet | undefined
    // One call per operation of the route table, in this order (getPet reads the created pet).
    const operations = {
      createPet: async () => {
        pet = await client.createPet({ name, categoryId: 9_007_199_254_740_991 })
        const response = expectStatus(answers.at(-1)?.response, 201, 'POST /pets')
        if (pet.name !== name) throw new Error('the pet came back with another name')
        if (!response.headers.get('location')?.endsWith(`/pets/${pet.id}`)) {
          throw new Error('no Location naming the new pet')
        }
        return `201, pet ${pet.id} with its Location`
      },
      getPet: async () => {
        if (!pet) throw new Error('no pet was created')
        const fetched = await client.getPet(pet.id)
        expectStatus(answers.at(-1)?.response, 200, `GET /pets/${pet.id}`)
        if (JSON.stringify(fetched) !== JSON.stringify(pet))
          throw new Error('another pet came back')
        return `200, the same pet`
      },
      listPets: async () => {
        const page = await client.listPets({ limit: 2 })
        expectStatus(answers.at(-1)?.response, 200, 'GET /pets')
        return `200, ${page.pets.length} pet(s)${page.nextCursor ? ' and a next page' : ''}`
      },
    } satisfies Record<OperationId, () => Promise<string>>
    for (const [operation, run] of Object.entries(operations)) await check(operation, run)
    await check('every operation', async () => {
      const called = new Set(
        answers.map(({ response }) => operationIdOf(response.method, response.url)),
      )
      const missing = DOCUMENTED_OPERATIONS.filter((operation) => !called.has(operation))
      if (missing.length > 0) {
        throw new Error(
          `${missing.join(', ')} of openapi/openapi.json never called: add a call to ops/smoke-runner.ts`,
        )
      }
      return `all ${DOCUMENTED_OPERATIONS.length} operations of openapi/openapi.json answered`
    })
    await check('rate-limit headers', async () => {
      const keyed = answers
        .map(({ response }) => response)
        .filter((response) => response.status !== 401)
      for (const response of keyed) {
        const missing = RATE_LIMIT_HEADERS.filter((header) => !response.headers.has(header))
        if (missing.length > 0) {
          throw new Error(
            `${response.method} ${response.url} (${response.status}) lacks ${missing.join(', ')}`,
          )
        }
      }
      const last = keyed.at(-1)
      const policy = last?.headers.get('ratelimit-policy') ?? ''
      if (limits) {
        const expected = `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`
        if (policy !== expected)
          throw new Error(`RateLimit-Policy is ${policy}, expected ${expected}`)
      }
      const remaining = keyed.map((response) =>
        Number(response.headers.get('x-ratelimit-remaining')),
      )
      return `on all ${keyed.length} keyed answers; policy ${policy}; remaining ${remaining.join(', ')}`
    })
    await check('401', async () => {
      const from = answers.length
      for (const authorization of [`Bearer ${unknownKey()}`, undefined]) {
        await (await raw('/pets', authorization)).arrayBuffer()
      }
      for (const { response } of answers.slice(from)) {
        expectStatus(response, 401, 'GET /pets with an unknown key or none')
        if (RATE_LIMIT_HEADERS.some((header) => response.headers.has(header))) {
          throw new Error('a 401 carries rate-limit headers')
        }
        const { code } = JSON.parse(response.text) as { code?: string }
        if (code !== 'unauthorized') throw new Error(`a 401 with code ${code}`)
      }
      return 'for an unknown key and for none, Error bodies, no rate-limit headers'
    })
  } finally {
    if (temporaryId !== undefined && options.keys) {
      const id = temporaryId
      await check('temporary key revoked', async () => {
        await options.keys?.revoke(id)
        const response = await raw('/pets?limit=1', `Bearer ${apiKey}`)
        expectStatus(answers.at(-1)?.response, 401, 'GET /pets with the revoked key')
        await response.arrayBuffer()
        return `${id} gets 401`
      })
    }
  }
  options.report(
    `${result.failed === 0 ? 'passed' : 'FAILED'}: ${result.passed} of ${result.passed + result.failed} checks, ${answers.length} answers checked against openapi/openapi.json`,
  )
  return result
}
