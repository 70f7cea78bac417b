import { contractViolations, type ObservedResponse } from '#openapi/contract-validator.ts'
import { expectStatus, Interrupted } from './smoke-key-checks.ts'

/** What the recorder needs of the run's options (smoke-runner.ts). */
export interface RecorderOptions {
  baseUrl: string
  fetch: typeof fetch
  signal: AbortSignal | undefined
  report: (line: string) => void
}

/** One check as the run reported it. */
export interface CheckOutcome {
  name: string
  ok: boolean
  /** What it found, or why it failed. */
  detail: string
}

/** The run's count of checks, and each one's outcome in order. */
export interface SmokeTally {
  passed: number
  failed: number
  checks: CheckOutcome[]
}

/**
 * The run's record: every answer with the contract problems it has, and the checks that read it
 * (a check passes when `run` returns and its answers keep the contract). `result` counts them.
 */
export const smokeRecorder = (
  { baseUrl, fetch: fetchImpl, signal, report }: RecorderOptions,
  result: SmokeTally,
) => {
  /** Every answer of the run, in order, with the contract problems it has. */
  const answers: { response: ObservedResponse; problems: string[] }[] = []

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
      result.checks.push({ name, ok: true, detail })
      report(`  ok    ${name}: ${detail}`)
      return true
    } catch (error) {
      result.failed += 1
      const cutOff = signal?.aborted && (error as Error).name === 'AbortError'
      const why = cutOff ? 'interrupted (SIGINT or SIGTERM)' : (error as Error).message
      result.checks.push({ name, ok: false, detail: why })
      report(`  FAIL  ${name}: ${why}`)
      return false
    }
  }
  /** Between checks: an interruption ends the run here (the key is revoked on the way out). */
  const unlessInterrupted = async (name: string, run: () => Promise<string>) => {
    if (signal?.aborted) throw new Interrupted()
    return check(name, run)
  }

  const raw = (path: string, authorization?: string, cleanup = false) =>
    recordingFetch(
      `${baseUrl}${path}`,
      { headers: authorization === undefined ? {} : { Authorization: authorization } },
      cleanup,
    )
  /** The answer to the last call, which must have the status given. */
  const answered = (status: number, what: string) =>
    expectStatus(answers.at(-1)?.response, status, what)
  const errorCodeOf = (what: string) => {
    const { code } = JSON.parse(answers.at(-1)?.response.text ?? '{}') as { code?: string }
    if (typeof code !== 'string') throw new Error(`${what}: no Error body`)
    return code
  }
  return { answers, recordingFetch, check, unlessInterrupted, raw, answered, errorCodeOf }
}

export type SmokeRecorder = ReturnType<typeof smokeRecorder>
