/* The smoke test's key: whether the one given works, the wait for a temporary one to work. */
import type { ObservedResponse } from '#openapi/contract-validator.ts'

const PROGRESS_EVERY_MS = 5_000

/** A Ctrl-C (SIGINT) or SIGTERM: the checks stop, the temporary key is revoked. */
export class Interrupted extends Error {
  override name = 'Interrupted'
  override message = 'interrupted (SIGINT or SIGTERM): the remaining checks did not run'
}

/** A key no stage has: well-formed, so the gateway's authorizer (not its pattern) refuses it. */
export const expectStatus = (
  response: ObservedResponse | undefined,
  status: number,
  what: string,
) => {
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

/** How long this address is refused for failed authentications, and what says so. */
export interface Lockout {
  seconds: number
  /** `Retry-After 42` (the local server), or the WAF's window when the answer names no time. */
  source: string
}

/**
 * The WAF's keyless rule (operations.md, "Edge rules") counts an address's requests over 5
 * minutes and answers its block without a Retry-After: it ends at the latest 5 minutes on.
 */
const WAF_WINDOW_SECONDS = 300

/**
 * The lockout an answer reports (429 `too_many_failed_auths`: the WAF's keyless rule on AWS, or
 * the local server's edge that enforces it), else undefined. Requests without a valid key then
 * get 429 instead of 401 until it ends.
 */
export const lockoutOf = (response: ObservedResponse | undefined): Lockout | undefined => {
  if (response?.status !== 429) return undefined
  try {
    const { code } = JSON.parse(response.text) as { code?: unknown }
    if (code !== 'too_many_failed_auths') return undefined
  } catch {
    return undefined
  }
  const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN)
  return Number.isFinite(retryAfter) && retryAfter > 0
    ? { seconds: Math.ceil(retryAfter), source: `Retry-After ${Math.ceil(retryAfter)}` }
    : { seconds: WAF_WINDOW_SECONDS, source: "no Retry-After: the WAF's 5-minute window" }
}

/** What a run says when this address is locked out: wait, and for how long. */
export const lockoutAdvice = ({ seconds, source }: Lockout): string =>
  `this address is refused for ${seconds} s more after too many failed authentications (429 too_many_failed_auths, ${source}): requests without a valid key get 429, not 401, until then. Wait ${seconds} s and run the smoke test again`

/** One `GET /pets?limit=1` with the key under test, its body read. */
export type KeyProbe = () => Promise<{ status: number; text: string }>

/**
 * A key given with --key works on its first request or not at all (the keys CLI returns a key
 * only once it works): one request, and a refusal says what to do instead of waiting.
 */
export const givenKeyWorks = async (probe: KeyProbe, keysCommand: string): Promise<string> => {
  const { status, text } = await probe()
  if (status === 200) return '200'
  if (status === 401) {
    throw new Error(
      `the key given with --key was refused (401): it is mistyped, revoked or disabled, or a key of another stage. Check it (${keysCommand} list shows the stage's keys), or make one with ${keysCommand} create --plan free and pass the value it prints`,
    )
  }
  throw new Error(`GET /pets answered ${describeAnswer(status, text)}`)
}

export interface TemporaryKeyWait {
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
 * 5 s, so the wait's own 401s stay far below any limit of the edge per address (the local edge
 * answers wrong keys late past 30 a minute: local/edge/local-edge.ts), saying every 5 s what it
 * waits for.
 */
export const temporaryKeyWorks = async (wait: TemporaryKeyWait): Promise<string> => {
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
