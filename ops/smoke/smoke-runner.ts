import { randomBytes, randomUUID } from 'node:crypto'
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
 * rate-limit headers and, for its own key, that a revoked key is refused. With writes it creates
 * one pet per run, without a status, so the pet shows in no status-filtered list; without, it
 * writes nothing: createPet is checked with a body the API refuses (400), getPet with a listed
 * pet and an id nobody has (404). Its temporary key is revoked however the run ends (a failure,
 * an interruption); a key it cannot revoke is named with the command that does.
 */

export interface SmokeKeys {
  /** `onCreated` hears the key's id as soon as the key exists, before it works. */
  create(
    onCreated: (id: string) => void,
  ): Promise<{ id: string; value: string; limits: PlanLimits }>
  revoke(id: string): Promise<void>
  /** The command an operator runs to revoke a key the run could not. */
  revokeCommand(id: string): string
}

/**
 * Why a temporary key could not be made or revoked; `keptKeyId` names a key made that still
 * exists (a create cut off after the key was made), `gone` a key deleted even though the wait
 * for its removal to be in force failed.
 */
export class TemporaryKeyError extends Error {
  override name = 'TemporaryKeyError'
  constructor(
    message: string,
    readonly keptKeyId: string | undefined,
    readonly gone = false,
  ) {
    super(message)
  }
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
  /** Whether the run may create a pet (never against production: smoke-command.ts decides). */
  writes: boolean
  /** Ctrl-C or SIGTERM: the checks stop, the temporary key is revoked. */
  signal?: AbortSignal | undefined
  /** Hears the temporary key that exists and is not revoked yet (undefined once it is gone). */
  onTemporaryKey?: (id: string | undefined) => void
  /**
   * The keys CLI for this target (`npm run keys -- --stage staging`), named when the key given
   * with --key is refused.
   */
  keysCommand?: string | undefined
}

export interface SmokeResult {
  passed: number
  failed: number
}

/** How long the run may be quiet while it waits before it says what it waits for. */
const PROGRESS_EVERY_MS = 5_000

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A pet id no stage hands out for a long time yet (ids count up from 1). */
const UNUSED_PET_ID = Number.MAX_SAFE_INTEGER

class Interrupted extends Error {
  override name = 'Interrupted'
  override message = 'interrupted (SIGINT or SIGTERM): the remaining checks did not run'
}

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

/** The Error body's code and message of an answer, for a failure line. */
const describeAnswer = (status: number, text: string): string => {
  try {
    const { code, message } = JSON.parse(text) as { code?: unknown; message?: unknown }
    if (typeof code === 'string') return `${status} ${code}: ${String(message)}`
  } catch {
    // Not an Error body: its start says more than nothing.
  }
  return `${status}: ${text.slice(0, 200)}`
}

/** One `GET /pets?limit=1` with the key under test, its body read. */
type KeyProbe = () => Promise<{ status: number; text: string }>

/**
 * A key given with --key works on its first request or not at all (the keys CLI returns a key
 * only once it works): one request, and a refusal says what to do instead of waiting.
 */
const givenKeyWorks = async (probe: KeyProbe, keysCommand: string): Promise<string> => {
  const { status, text } = await probe()
  if (status === 200) return '200'
  if (status === 401) {
    throw new Error(
      `the key given with --key was refused (401): it is mistyped, revoked or disabled, or a key of another stage. Check it (${keysCommand} list shows the stage's keys), or make one with ${keysCommand} create --plan free and pass the value it prints`,
    )
  }
  throw new Error(`GET /pets answered ${describeAnswer(status, text)}`)
}

interface TemporaryKeyWait {
  probe: KeyProbe
  sleep: (ms: number) => Promise<void>
  now: () => number
  waitMs: number
  report: (line: string) => void
  /** Resolves at an interruption, which ends the wait. */
  aborted: Promise<void>
  isAborted: () => boolean
}

/**
 * A temporary key may take a moment to reach the authorizer: tried again after 1, 2, 4, then every
 * 5 s, so the wait's own 401s stay far below the failed-authentication limit (30 a minute from
 * one address, local/gateway/failed-auth-limiter.ts), saying every 5 s what it waits for.
 */
const temporaryKeyWorks = async (wait: TemporaryKeyWait): Promise<string> => {
  const started = wait.now()
  let pauseMs = 1_000
  let saidAt = started
  for (;;) {
    const { status, text } = await wait.probe()
    const waitedS = ((wait.now() - started) / 1000).toFixed(1)
    if (status === 200) return `200 after ${waitedS} s`
    if (status !== 401) throw new Error(`GET /pets answered ${describeAnswer(status, text)}`)
    if (wait.now() - started >= wait.waitMs) {
      throw new Error(
        `the new key still gets 401 after ${waitedS} s: the stage's authorizer does not know it yet (its key sync)`,
      )
    }
    if (wait.now() - saidAt >= PROGRESS_EVERY_MS) {
      wait.report(
        `  ..    the key works: 401 so far, waited ${waitedS} s of at most ${wait.waitMs / 1000} s`,
      )
      saidAt = wait.now()
    }
    await Promise.race([wait.sleep(pauseMs), wait.aborted])
    if (wait.isAborted()) throw new Interrupted()
    pauseMs = Math.min(pauseMs * 2, PROGRESS_EVERY_MS)
  }
}

export const runSmoke = async (options: SmokeOptions): Promise<SmokeResult> => {
  const fetchImpl = options.fetch ?? fetch
  const sleep = options.sleep ?? defaultSleep
  const now = options.now ?? Date.now
  const { signal } = options
  const result: SmokeResult = { passed: 0, failed: 0 }
  /** Every answer of the run, in order, with the contract problems it has. */
  const answers: { response: ObservedResponse; problems: string[] }[] = []
  const aborted = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve()
    signal?.addEventListener('abort', () => resolve(), { once: true })
  })

  /** Checks' requests stop at an interruption; the revocation check's (`cleanup`) do not. */
  const recordingFetch = async (
    input: Request | string,
    init?: RequestInit,
    cleanup = false,
  ): Promise<Response> => {
    const request = new Request(input, {
      ...init,
      ...(signal && !cleanup ? { signal } : {}),
    })
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
      const cutOff = signal?.aborted && (error as Error).name === 'AbortError'
      options.report(
        `  FAIL  ${name}: ${cutOff ? 'interrupted (SIGINT or SIGTERM)' : (error as Error).message}`,
      )
      return false
    }
  }
  /** Between checks: an interruption ends the run here (the key is revoked on the way out). */
  const unlessInterrupted = async (name: string, run: () => Promise<string>) => {
    if (signal?.aborted) throw new Interrupted()
    return check(name, run)
  }

  options.report(
    `smoke test of ${options.baseUrl} (${options.writes ? 'creates a pet' : 'read-only: writes nothing'})`,
  )
  let key = options.key
  let limits: PlanLimits | undefined
  /** The temporary key while it exists. */
  let temporaryId: string | undefined
  /** Why the checks after one that failed did not run. */
  let stopped: string | undefined
  const raw = (path: string, authorization?: string, cleanup = false) =>
    recordingFetch(
      `${options.baseUrl}${path}`,
      { headers: authorization === undefined ? {} : { Authorization: authorization } },
      cleanup,
    )

  const checks = async () => {
    if (key === undefined) {
      const made = await check('temporary key', async () => {
        if (!options.keys) throw new Error('no key given and no way to make one')
        try {
          const created = await options.keys.create((id) => {
            temporaryId = id
            options.onTemporaryKey?.(id)
          })
          key = created.value
          limits = created.limits
          return `${created.id} (${created.limits.perMinute}/minute, ${created.limits.perDay}/day)`
        } catch (error) {
          // A create undone (the key deleted again) leaves nothing to revoke.
          if (error instanceof TemporaryKeyError && error.keptKeyId === undefined) {
            temporaryId = undefined
            options.onTemporaryKey?.(undefined)
          }
          throw error
        }
      })
      if (!made) return
    }
    const apiKey = key as string

    const probe: KeyProbe = async () => {
      const response = await raw('/pets?limit=1', `Bearer ${apiKey}`)
      return { status: response.status, text: await response.text() }
    }
    const works = await unlessInterrupted('the key works', () =>
      options.key === undefined
        ? temporaryKeyWorks({
            probe,
            sleep,
            now,
            waitMs: options.keyWaitMs ?? 30_000,
            report: options.report,
            aborted,
            isAborted: () => signal?.aborted === true,
          })
        : givenKeyWorks(probe, options.keysCommand ?? 'npm run keys --'),
    )
    // Every later check calls with the key: without one that works they could only fail, and
    // their 401s would count against this address's failed-authentication limit.
    if (!works) {
      if (signal?.aborted) throw new Interrupted()
      stopped = 'the key does not work'
      return
    }

    // The typed client, one attempt per call: the smoke test reports what the stage answers.
    const client = createPetstoreClient({
      baseUrl: options.baseUrl,
      apiKey,
      maxAttempts: 1,
      fetch: (request) => recordingFetch(request),
      // A rate-limit answer pauses every later call (Retry-After): the report says so, not silence.
      onAttempt: ({ method, url, status, code, waitMs }) => {
        if (waitMs < 1_000) return
        const { pathname, search } = new URL(url)
        options.report(
          `  ..    ${method} ${pathname}${search} answered ${status ?? 'nothing'}${code ? ` ${code}` : ''}: the next call waits ${Math.ceil(waitMs / 1000)} s`,
        )
      },
    })
    const name = `smoke test ${new Date(now()).toISOString()}`
    let pet: Pet | undefined
    /** The answer to the last call, which must have the status given. */
    const answered = (status: number, what: string) =>
      expectStatus(answers.at(-1)?.response, status, what)
    const errorCodeOf = (what: string) => {
      const { code } = JSON.parse(answers.at(-1)?.response.text ?? '{}') as { code?: string }
      if (typeof code !== 'string') throw new Error(`${what}: no Error body`)
      return code
    }
    // One call per operation of the route table, in this order (getPet reads the pet created or
    // listed before it).
    const operations = options.writes
      ? ({
          createPet: async () => {
            pet = await client.createPet({ name, categoryId: 9_007_199_254_740_991 })
            const response = answered(201, 'POST /pets')
            if (pet.name !== name) throw new Error('the pet came back with another name')
            if (!response.headers.get('location')?.endsWith(`/pets/${pet.id}`)) {
              throw new Error('no Location naming the new pet')
            }
            return `201, pet ${pet.id} with its Location`
          },
          getPet: async () => {
            if (!pet) throw new Error('no pet was created')
            const fetched = await client.getPet(pet.id)
            answered(200, `GET /pets/${pet.id}`)
            if (JSON.stringify(fetched) !== JSON.stringify(pet))
              throw new Error('another pet came back')
            return `200, the same pet`
          },
          listPets: async () => {
            const page = await client.listPets({ limit: 2 })
            answered(200, 'GET /pets')
            return `200, ${page.pets.length} pet(s)${page.nextCursor ? ' and a next page' : ''}`
          },
        } satisfies Record<OperationId, () => Promise<string>>)
      : ({
          listPets: async () => {
            const page = await client.listPets({ limit: 2 })
            answered(200, 'GET /pets')
            pet = page.pets[0]
            return `200, ${page.pets.length} pet(s)${page.nextCursor ? ' and a next page' : ''}`
          },
          getPet: async () => {
            const listed = pet
            if (listed) {
              const fetched = await client.getPet(listed.id)
              answered(200, `GET /pets/${listed.id}`)
              if (JSON.stringify(fetched) !== JSON.stringify(listed))
                throw new Error('another pet came back than the one listed')
            }
            await client.getPet(UNUSED_PET_ID).catch(() => undefined)
            answered(404, `GET /pets/${UNUSED_PET_ID}`)
            const code = errorCodeOf(`GET /pets/${UNUSED_PET_ID}`)
            if (code !== 'pet_not_found') throw new Error(`a 404 with code ${code}`)
            return `${listed ? `200, the pet listed; ` : ''}404 pet_not_found for an id nobody has`
          },
          createPet: async () => {
            // A name the API refuses: the operation answers, nothing is written.
            await client.raw.POST('/pets', {
              body: { name: '', categoryId: 1 },
              params: { header: { 'Idempotency-Key': randomUUID() } },
            })
            answered(400, 'POST /pets with an empty name')
            const code = errorCodeOf('POST /pets with an empty name')
            if (code !== 'validation_failed') throw new Error(`a 400 with code ${code}`)
            return '400 validation_failed for an empty name, nothing written'
          },
        } satisfies Record<OperationId, () => Promise<string>>)
    for (const [operation, run] of Object.entries(operations)) {
      await unlessInterrupted(operation, run)
    }
    await unlessInterrupted('every operation', async () => {
      const called = new Set(
        answers.map(({ response }) => operationIdOf(response.method, response.url)),
      )
      const missing = DOCUMENTED_OPERATIONS.filter((operation) => !called.has(operation))
      if (missing.length > 0) {
        throw new Error(
          `${missing.join(', ')} of openapi/openapi.json never called: add a call to ops/smoke/smoke-runner.ts`,
        )
      }
      return `all ${DOCUMENTED_OPERATIONS.length} operations of openapi/openapi.json answered`
    })
    await unlessInterrupted('rate-limit headers', async () => {
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
    await unlessInterrupted('401', async () => {
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
  }

  try {
    await checks()
  } catch (error) {
    if (!(error instanceof Interrupted)) throw error
    result.failed += 1
    options.report(`  FAIL  ${error.message}`)
  } finally {
    const keys = options.keys
    if (temporaryId !== undefined && keys) {
      const id = temporaryId
      await check('temporary key revoked', async () => {
        try {
          await keys.revoke(id)
        } catch (error) {
          if (error instanceof TemporaryKeyError && error.gone) {
            options.onTemporaryKey?.(undefined)
            throw error
          }
          throw new Error(
            `${(error as Error).message}. Key ${id} is left and may work: revoke it with ${keys.revokeCommand(id)}`,
          )
        }
        options.onTemporaryKey?.(undefined)
        // A create cut off before the key's value came back: nothing to try the key with.
        if (key === undefined) return `${id} deleted`
        const response = await raw('/pets?limit=1', `Bearer ${key}`, true)
        expectStatus(answers.at(-1)?.response, 401, 'GET /pets with the revoked key')
        await response.arrayBuffer()
        return `${id} gets 401`
      })
    }
  }
  const total = result.passed + result.failed
  options.report(
    `${
      result.failed === 0
        ? `passed: ${result.passed} of ${total} checks`
        : `FAILED: ${result.failed} of ${total} checks failed, ${result.passed} passed${stopped ? ` (${stopped}: the other checks did not run)` : ''}`
    }, ${answers.length} answer${answers.length === 1 ? '' : 's'} checked against openapi/openapi.json`,
  )
  return result
}
