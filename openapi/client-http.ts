import type { components } from './openapi-types.ts'

/* What the client reads from an answer (its Error body, its headers) and how it waits. */

type ErrorBody = components['schemas']['Error']

/** Statuses whose response may not have a body. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304])

const isErrorBody = (value: unknown): value is ErrorBody =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as ErrorBody).code === 'string' &&
  typeof (value as ErrorBody).message === 'string' &&
  typeof (value as ErrorBody).status === 'number'

export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The Error body of a failed answer; a proxy's HTML page or an empty body still gets one. */
export const errorBodyOf = (response: Response, parsed: unknown): ErrorBody =>
  isErrorBody(parsed)
    ? parsed
    : {
        code: 'internal_error',
        message: `HTTP ${response.status} ${response.statusText} without an Error body`,
        status: response.status,
      }

/** `Retry-After` in seconds or as an HTTP date, in milliseconds from now, at most `capMs`. */
export const retryAfterMs = (
  headers: Headers,
  nowMs: number,
  capMs: number,
): number | undefined => {
  const value = headers.get('Retry-After')?.trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return Math.min(capMs, Number(value) * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.min(capMs, Math.max(0, at - nowMs))
}

export const integerHeader = (headers: Headers, name: string): number | undefined => {
  const value = headers.get(name)
  return value !== null && /^\d+$/.test(value) ? Number(value) : undefined
}

/**
 * The whole answer read before it counts as received, so a connection dropped halfway through a
 * body is a network failure the retry rules cover, not a broken stream handed to the caller.
 */
export const buffered = async (response: Response): Promise<Response> =>
  NULL_BODY_STATUSES.has(response.status)
    ? response
    : new Response(await response.arrayBuffer(), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      })

export const abortableSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })

/** A promise that settles as `promise` does, or rejects as soon as `signal` aborts. */
export const untilAborted = <T>(promise: Promise<T>, signal: AbortSignal): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })

export const isAbort = (error: unknown) =>
  error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
