import { createPetstoreClient } from '#openapi/petstore-client.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import {
  expectStatus,
  givenKeyWorks,
  Interrupted,
  type KeyProbe,
  lockoutAdvice,
  lockoutOf,
  temporaryKeyWorks,
} from './smoke-key-checks.ts'
import {
  everyOperationAnswered,
  rateLimitHeadersShown,
  smokeOperations,
  unauthorizedRefused,
} from './smoke-operations.ts'
import { type SmokeRecorder, type SmokeTally, smokeRecorder } from './smoke-recorder.ts'

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

export interface SmokeResult extends SmokeTally {
  /** Why the checks after a failed one did not run, if they did not. */
  stopped: string | undefined
  /** Answers checked against openapi/openapi.json. */
  answers: number
}

/** How long the run may be quiet while it waits before it says what it waits for. */
const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What a run learns as it goes: the key it calls with, its limits, the temporary key's id. */
interface RunState {
  key: string | undefined
  limits: PlanLimits | undefined
  /** The temporary key while it exists. */
  temporaryId: string | undefined
  /** Why the checks after one that failed did not run. */
  stopped: string | undefined
}

/** Makes the temporary key; false when there is none to call with. */
const makeTemporaryKey = (
  options: SmokeOptions,
  { check }: SmokeRecorder,
  run: RunState,
): Promise<boolean> => {
  return check('temporary key', async () => {
    if (!options.keys) throw new Error('no key given and no way to make one')
    try {
      const created = await options.keys.create((id) => {
        run.temporaryId = id
        options.onTemporaryKey?.(id)
      })
      run.key = created.value
      run.limits = created.limits
      return `${created.id} (${created.limits.perMinute}/minute, ${created.limits.perDay}/day)`
    } catch (error) {
      // A create undone (the key deleted again) leaves nothing to revoke.
      if (error instanceof TemporaryKeyError && error.keptKeyId === undefined) {
        run.temporaryId = undefined
        options.onTemporaryKey?.(undefined)
      }
      throw error
    }
  })
}

/** The temporary key revoked, and refused from then on (its check runs even after an interruption). */
const revokeTemporaryKey = (
  options: SmokeOptions,
  { check, raw, answers }: SmokeRecorder,
  keys: SmokeKeys,
  { id, key }: { id: string; key: string | undefined },
) =>
  check('temporary key revoked', async () => {
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
    const locked = lockoutOf(answers.at(-1)?.response)
    if (locked !== undefined) {
      await response.arrayBuffer()
      throw new Error(`${id} is deleted, but its 401 could not be seen: ${lockoutAdvice(locked)}`)
    }
    expectStatus(answers.at(-1)?.response, 401, 'GET /pets with the revoked key')
    await response.arrayBuffer()
    return `${id} gets 401`
  })

export const runSmoke = async (options: SmokeOptions): Promise<SmokeResult> => {
  const sleep = options.sleep ?? defaultSleep
  const now = options.now ?? Date.now
  const { signal } = options
  const result: SmokeTally = { passed: 0, failed: 0, checks: [] }
  const recorder = smokeRecorder(
    { baseUrl: options.baseUrl, fetch: options.fetch ?? fetch, signal, report: options.report },
    result,
  )
  const { answers, raw, recordingFetch, unlessInterrupted } = recorder
  const aborted = new Promise<void>((resolve) => {
    if (signal?.aborted) resolve()
    signal?.addEventListener('abort', () => resolve(), { once: true })
  })

  options.report(
    `smoke test of ${options.baseUrl} (${options.writes ? 'creates a pet' : 'read-only: writes nothing'})`,
  )
  const run: RunState = {
    key: options.key,
    limits: undefined,
    temporaryId: undefined,
    stopped: undefined,
  }

  const checks = async () => {
    // First, before a key is made: an address locked out for failed authentications gets 429
    // where the 401s are checked, and the run says how long to wait instead of failing them.
    const before = answers.length
    const refused = await unlessInterrupted('401', () => unauthorizedRefused(recorder))
    // Any of its answers: a wrong key and no key are counted apart, and either can be refused.
    const locked = answers
      .slice(before)
      .map(({ response }) => lockoutOf(response))
      .find((lockout) => lockout !== undefined)
    if (!refused && locked !== undefined) {
      run.stopped = `this address is locked out for ${locked.seconds} s`
      return
    }
    if (run.key === undefined && !(await makeTemporaryKey(options, recorder, run))) return
    const apiKey = run.key as string

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
      run.stopped = 'the key does not work'
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
        // The gate's hold counts down from the answer: a `Retry-After: 1` is a little under
        // 1,000 ms by now (more so on a busy machine). With one attempt per call, any hold is a
        // pause the server asked for.
        if (waitMs <= 0) return
        const { pathname, search } = new URL(url)
        options.report(
          `  ..    ${method} ${pathname}${search} answered ${status ?? 'nothing'}${code ? ` ${code}` : ''}: the next call waits ${Math.ceil(waitMs / 1000)} s`,
        )
      },
    })
    const name = `smoke test ${new Date(now()).toISOString()}`
    for (const [operation, call] of Object.entries(
      smokeOperations(client, recorder, options.writes, name),
    )) {
      await unlessInterrupted(operation, call)
    }
    await unlessInterrupted('every operation', () => everyOperationAnswered(recorder))
    await unlessInterrupted('rate-limit headers', () => rateLimitHeadersShown(recorder, run.limits))
  }

  try {
    await checks()
  } catch (error) {
    if (!(error instanceof Interrupted)) throw error
    result.failed += 1
    result.checks.push({ name: 'interrupted', ok: false, detail: error.message })
    options.report(`  FAIL  ${error.message}`)
  } finally {
    const keys = options.keys
    if (run.temporaryId !== undefined && keys) {
      await revokeTemporaryKey(options, recorder, keys, { id: run.temporaryId, key: run.key })
    }
  }
  const total = result.passed + result.failed
  options.report(
    `${
      result.failed === 0
        ? `passed: ${result.passed} of ${total} checks`
        : `FAILED: ${result.failed} of ${total} checks failed, ${result.passed} passed${run.stopped ? ` (${run.stopped}: the other checks did not run)` : ''}`
    }, ${answers.length} answer${answers.length === 1 ? '' : 's'} checked against openapi/openapi.json`,
  )
  return { ...result, stopped: run.stopped, answers: answers.length }
}
