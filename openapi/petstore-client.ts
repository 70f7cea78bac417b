import createClient from 'openapi-fetch'
import {
  abortableSleep,
  buffered,
  errorBodyOf,
  integerHeader,
  isAbort,
  parseJson,
  retryAfterMs,
  untilAborted,
} from './client-http.ts'
import type { components, operations, paths } from './openapi-types.ts'

/**
 * A client for the pet store API that follows the API's own rules, so its callers need not:
 * it waits out `Retry-After` and backs off exponentially, pauses when `X-RateLimit-Remaining`
 * reaches 0 instead of collecting a 429, never hammers a suspended key, retries only what is
 * safe to retry (a create always carries an `Idempotency-Key`), pages through `X-Next-Cursor`
 * and turns every failure into one typed error. Types come from the generated
 * `openapi-types.ts`; calls are made by openapi-fetch. See docs/client.md.
 */

export type Pet = components['schemas']['Pet']
export type NewPet = components['schemas']['NewPet']
export type PetStatus = components['schemas']['PetStatus']
export type ErrorBody = components['schemas']['Error']
export type ErrorCode = ErrorBody['code']
export type ListPetsQuery = NonNullable<operations['listPets']['parameters']['query']>

export interface PetsPage {
  pets: Pet[]
  /** Pass as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
}

/** What one attempt of one call did, for logging or metering retries. */
export interface AttemptEvent {
  method: string
  url: string
  /** 1 for the first try of a call. */
  attempt: number
  /** undefined when no response came (a network failure, see `error`). */
  status: number | undefined
  code: ErrorCode | undefined
  error: unknown
  /** Whether this call tries again. */
  retry: boolean
  /**
   * How long the client waits before its next request because of this answer: the delay before
   * the retry, or the pause a rate-limit answer imposed on every later call (0 when none).
   */
  waitMs: number
}

export interface PetstoreClientOptions {
  /** Ends in `/v1`, e.g. `http://127.0.0.1:3000/v1`. */
  baseUrl: string
  apiKey: string
  /** Tries per call, the first included. */
  maxAttempts?: number
  /** Most time one call spends waiting (retry delays and rate-limit pauses) before it gives up. */
  maxWaitMs?: number
  /**
   * Most time one call takes in all: its requests, retries, pauses and its turn behind the
   * client's other calls. Past it the call fails with a `TimeoutError`, wherever it was waiting.
   * Default: `maxWaitMs` + 30 s.
   */
  timeoutMs?: number
  /**
   * The longest `Retry-After` (and `X-RateLimit-Reset`) taken as given: a longer one (a proxy's
   * error page) counts as this long, so it cannot pause the client for days.
   */
  maxRetryAfterMs?: number
  /** First backoff step; each further retry doubles it, up to `maxDelayMs`. */
  baseDelayMs?: number
  maxDelayMs?: number
  /**
   * On 429 `key_suspended` (15 minutes): `give-up` fails the call, and every later call fails
   * without a request until the suspension ends; `wait` waits the whole `Retry-After` when
   * `maxWaitMs` allows it.
   */
  whenSuspended?: 'give-up' | 'wait'
  onAttempt?: (event: AttemptEvent) => void
  fetch?: (request: Request) => Promise<Response>
  /** Resolves after `ms`, or rejects as soon as the call's signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /** Milliseconds since the epoch; compared with `X-RateLimit-Reset`. */
  now?: () => number
  /** In [0, 1): the jitter of each backoff. */
  random?: () => number
}

const DEFAULTS = {
  maxAttempts: 5,
  // Long enough to wait out a whole minute window (Free: 60 requests a minute), not a day's.
  maxWaitMs: 90_000,
  /** The default deadline is maxWaitMs plus this, for the requests themselves. */
  requestAllowanceMs: 30_000,
  // The longest the API itself asks for: `quota_exceeded` waits for UTC midnight, under a day.
  maxRetryAfterMs: 86_400_000,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  whenSuspended: 'give-up',
} as const

const STATUSES_WITH_RETRY_AFTER = new Set([409, 429, 503])
const IDEMPOTENCY_KEY = 'Idempotency-Key'
/** A minute window resets within a minute: a later reset is the day's (or a suspension). */
const MINUTE_MS = 60_000

/** The API's Error body, thrown for every answer that is not a success. */
export class PetstoreApiError extends Error {
  override readonly name = 'PetstoreApiError'
  readonly status: number
  readonly code: ErrorCode
  readonly requestId: string | undefined
  readonly details: ErrorBody['details']
  readonly body: ErrorBody
  /** What `Retry-After` asked for, or how long the client's own pause had left. */
  readonly retryAfterMs: number | undefined
  /** undefined when the client did not send the request (a pause longer than it may wait). */
  readonly response: Response | undefined

  constructor(body: ErrorBody, response: Response | undefined, retryAfterMs: number | undefined) {
    super(`${body.status} ${body.code}: ${body.message}`)
    this.status = body.status
    this.code = body.code
    this.requestId = body.requestId
    this.details = body.details
    this.body = body
    this.response = response
    this.retryAfterMs = retryAfterMs
  }
}

interface Ticket {
  /** How many requests this client had sent, this one included. */
  sequence: number
  release(): void
}

/**
 * The rate-limit state one client shares across its calls: a pause (after a 429, or until the
 * reset once no request is left) and the budget the last headers reported, less the requests
 * sent since. While the budget is unknown (first request, new window) one request goes at a
 * time, so concurrent calls learn it before a burst can overrun it.
 */
const createRateGate = (
  now: () => number,
  sleep: (ms: number, signal: AbortSignal) => Promise<void>,
  maxRetryAfterMs: number,
) => {
  let pause: { untilMs: number; body: ErrorBody | undefined } = { untilMs: 0, body: undefined }
  let budget: { remaining: number; resetMs: number } | undefined
  let probe: Promise<void> | undefined
  let sent = 0

  const notSent = (waitMs: number): PetstoreApiError => {
    const body = pause.body ?? {
      code: waitMs > MINUTE_MS ? 'quota_exceeded' : 'rate_limited',
      message: 'No request left in this window.',
      status: 429,
    }
    const why = body.code === 'key_suspended' ? 'the key is suspended' : 'the client is paused'
    return new PetstoreApiError(
      {
        ...body,
        message: `Not sent: ${why} for ${Math.ceil(waitMs / 1000)} s more. ${body.message}`,
      },
      undefined,
      waitMs,
    )
  }

  return {
    /** Waits until a request may go (ms waited, a ticket), or throws when it may not wait so long. */
    async acquire(
      mayWaitMs: number,
      mayWaitOut: (body: ErrorBody | undefined) => boolean,
      signal: AbortSignal,
    ): Promise<{ waitedMs: number; ticket: Ticket }> {
      let waitedMs = 0
      for (;;) {
        const nowMs = now()
        if (budget && nowMs >= budget.resetMs) budget = undefined
        if (budget && budget.remaining <= 0 && pause.untilMs < budget.resetMs) {
          pause = { untilMs: budget.resetMs, body: undefined }
        }
        if (pause.untilMs > nowMs) {
          const waitMs = pause.untilMs - nowMs
          if (waitMs > mayWaitMs - waitedMs || !mayWaitOut(pause.body)) throw notSent(waitMs)
          await sleep(waitMs, signal)
          waitedMs += waitMs
          continue
        }
        if (!budget) {
          if (probe) {
            // Another call's request is out: wait for its answer, but not past this call's
            // signal or deadline (that request may hang for as long as its own allow).
            await untilAborted(probe, signal)
            continue
          }
          let done = () => {}
          probe = new Promise((resolve) => {
            done = resolve
          })
          sent += 1
          const release = () => {
            probe = undefined
            done()
          }
          return { waitedMs, ticket: { sequence: sent, release } }
        }
        budget.remaining -= 1
        sent += 1
        return { waitedMs, ticket: { sequence: sent, release: () => {} } }
      }
    },
    /** Learns from an answer's rate-limit headers; a 429 pauses every call for `pauseMs`. */
    observe(response: Response, ticket: Ticket, body: ErrorBody | undefined, pauseMs: number) {
      const remaining = integerHeader(response.headers, 'X-RateLimit-Remaining')
      const reset = integerHeader(response.headers, 'X-RateLimit-Reset')
      if (remaining !== undefined && reset !== undefined) {
        // Requests sent after this one may have been counted before it: assume they were.
        const left = remaining - (sent - ticket.sequence)
        // A reset further away than any the API announces is a wrong header: capped like Retry-After.
        const resetMs = Math.min(reset * 1000, now() + maxRetryAfterMs)
        if (!budget || resetMs > budget.resetMs) budget = { remaining: left, resetMs }
        else if (resetMs === budget.resetMs) budget.remaining = Math.min(budget.remaining, left)
      }
      if (response.status === 429) {
        const untilMs = now() + pauseMs
        if (untilMs >= pause.untilMs) pause = { untilMs, body }
      }
      ticket.release()
    },
    /** How long the next request would be held. */
    heldForMs(): number {
      const nowMs = now()
      const budgetPause = budget && budget.remaining <= 0 ? budget.resetMs : 0
      return Math.max(0, pause.untilMs - nowMs, budgetPause - nowMs)
    },
  }
}

/** The client's settings: the options given, the defaults for the others. */
const clientSettings = (options: PetstoreClientOptions) => ({
  maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
  maxWaitMs: options.maxWaitMs ?? DEFAULTS.maxWaitMs,
  // Above the waits a call may make: `whenSuspended: 'wait'` with a long maxWaitMs still waits.
  timeoutMs:
    options.timeoutMs ?? (options.maxWaitMs ?? DEFAULTS.maxWaitMs) + DEFAULTS.requestAllowanceMs,
  maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
  baseDelayMs: options.baseDelayMs ?? DEFAULTS.baseDelayMs,
  maxDelayMs: options.maxDelayMs ?? DEFAULTS.maxDelayMs,
  whenSuspended: options.whenSuspended ?? DEFAULTS.whenSuspended,
})

/**
 * The fetch every call goes through: one turn at a time behind the rate gate, retried with
 * backoff where that is safe, under the call's deadline.
 */
const createPoliteFetch = (
  options: PetstoreClientOptions,
  settings: ReturnType<typeof clientSettings>,
) => {
  const fetchImpl = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const sleep = options.sleep ?? abortableSleep
  // Looked up at each call, so a clock faked after the client was made is still the one used.
  const now = options.now ?? (() => Date.now())
  const random = options.random ?? Math.random
  const gate = createRateGate(now, sleep, settings.maxRetryAfterMs)

  /** Exponential with "equal jitter": between half and all of base * 2^(retry - 1), capped. */
  const backoffMs = (retry: number) => {
    const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** (retry - 1))
    return Math.round(ceiling / 2 + (random() * ceiling) / 2)
  }
  const mayWaitOut = (body: ErrorBody | undefined) =>
    body?.code !== 'key_suspended' || settings.whenSuspended === 'wait'

  /**
   * One call under its deadline: every wait (the turn behind other calls, pauses, retry delays)
   * and every request ends when the caller's signal aborts or `timeoutMs` has passed.
   */
  const politeFetch = async (callerRequest: Request): Promise<Response> => {
    const deadline = new AbortController()
    const timer = setTimeout(
      () =>
        deadline.abort(
          new DOMException(
            `The call took longer than timeoutMs (${settings.timeoutMs} ms)`,
            'TimeoutError',
          ),
        ),
      settings.timeoutMs,
    )
    try {
      const signal = AbortSignal.any([callerRequest.signal, deadline.signal])
      return await attempts(new Request(callerRequest, { signal }))
    } finally {
      clearTimeout(timer)
    }
  }

  const attempts = async (request: Request): Promise<Response> => {
    // A GET changes nothing; a POST may be repeated only under an Idempotency-Key.
    const replayable =
      request.method === 'GET' || request.method === 'HEAD' || request.headers.has(IDEMPOTENCY_KEY)
    let waitedMs = 0
    for (let attempt = 1; ; attempt += 1) {
      request.signal.throwIfAborted()
      const acquired = await gate.acquire(settings.maxWaitMs - waitedMs, mayWaitOut, request.signal)
      waitedMs += acquired.waitedMs
      const report = (event: Omit<AttemptEvent, 'method' | 'url' | 'attempt'>) =>
        options.onAttempt?.({ method: request.method, url: request.url, attempt, ...event })
      const backoff = backoffMs(attempt)

      let response: Response
      try {
        response = await buffered(await fetchImpl(request.clone()))
      } catch (error) {
        acquired.ticket.release()
        const retry =
          replayable &&
          !isAbort(error) &&
          attempt < settings.maxAttempts &&
          waitedMs + backoff <= settings.maxWaitMs
        report({ status: undefined, code: undefined, error, retry, waitMs: retry ? backoff : 0 })
        if (!retry) throw error
        await sleep(backoff, request.signal)
        waitedMs += backoff
        continue
      }

      const serverWaitMs = retryAfterMs(response.headers, now(), settings.maxRetryAfterMs)
      const body = STATUSES_WITH_RETRY_AFTER.has(response.status)
        ? errorBodyOf(response, parseJson(await response.clone().text()))
        : undefined
      gate.observe(response, acquired.ticket, body, serverWaitMs ?? backoff)
      const retryable =
        (response.status === 429 && mayWaitOut(body)) ||
        (response.status === 503 && replayable) ||
        (response.status === 409 && replayable && body?.code === 'idempotency_in_progress')
      // Retry-After is a floor, never undercut; the backoff on top grows with each repeat.
      const delayMs = (serverWaitMs ?? 0) + backoff
      const retry =
        retryable && attempt < settings.maxAttempts && waitedMs + delayMs <= settings.maxWaitMs
      report({
        status: response.status,
        code: body?.code,
        error: undefined,
        retry,
        waitMs: retry ? delayMs : gate.heldForMs(),
      })
      if (!retry) return response
      await sleep(delayMs, request.signal)
      waitedMs += delayMs
    }
  }
  return { politeFetch, now }
}

/**
 * The client: a method per operation (named by its operation id), `pets` (every pet, page by page) and `raw`, the
 * openapi-fetch client for anything else, which gets the same waits and retries.
 */
export const createPetstoreClient = (options: PetstoreClientOptions) => {
  const settings = clientSettings(options)
  const { politeFetch, now } = createPoliteFetch(options, settings)

  const raw = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
    fetch: politeFetch,
  })

  const failure = (response: Response, error: unknown): PetstoreApiError =>
    new PetstoreApiError(
      errorBodyOf(response, error),
      response,
      retryAfterMs(response.headers, now(), settings.maxRetryAfterMs),
    )

  /**
   * What a call answered: its body, or undefined for an answer without one (204); a failure
   * throws. Success is the status, never the presence of a body, so a method for an operation
   * that answers 204 is written as any other.
   */
  const answerOf = <Data>({
    data,
    error,
    response,
  }: {
    data?: Data
    error?: unknown
    response: Response
  }): { data: Data; response: Response } => {
    if (!response.ok) throw failure(response, error)
    return { data: data as Data, response }
  }

  const listPets = async (query: ListPetsQuery = {}): Promise<PetsPage> => {
    const { data, response } = answerOf(await raw.GET('/pets', { params: { query } }))
    return { pets: data, nextCursor: response.headers.get('X-Next-Cursor') ?? undefined }
  }

  return {
    listPets,

    /**
     * Always under an Idempotency-Key (a new one unless given), so a retried create can never
     * make a second pet. Pass your own key to make your own retries of this call safe too.
     */
    createPet: async (newPet: NewPet, { idempotencyKey }: { idempotencyKey?: string } = {}) => {
      const { data } = answerOf(
        await raw.POST('/pets', {
          body: newPet,
          params: { header: { [IDEMPOTENCY_KEY]: idempotencyKey ?? crypto.randomUUID() } },
        }),
      )
      return data
    },

    /** getPet is deprecated by the API (410 `gone` from 2030-12-05): prefer `listPets`. */
    getPet: async (petId: number): Promise<Pet> => {
      const { data } = answerOf(await raw.GET('/pets/{petId}', { params: { path: { petId } } }))
      return data
    },

    /** Every pet matching the query, each once, following `X-Next-Cursor` (100 a page unless given). */
    async *pets(query: ListPetsQuery = {}): AsyncGenerator<Pet, void, undefined> {
      let page = await listPets({ limit: 100, ...query })
      yield* page.pets
      while (page.nextCursor) {
        page = await listPets({ limit: 100, ...query, cursor: page.nextCursor })
        yield* page.pets
      }
    },

    raw,
  }
}

export type PetstoreClient = ReturnType<typeof createPetstoreClient>
