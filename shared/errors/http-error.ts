import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from './error-codes.ts'
import type { ErrorDetail } from './error-schema.ts'

export interface HttpErrorOptions {
  message?: string
  details?: ErrorDetail[]
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string>
  cause?: unknown
}

/** The one error type handlers and middleware throw; the error middleware renders it. */
export class HttpError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly details: ErrorDetail[] | undefined
  readonly headers: Record<string, string>

  constructor(code: ErrorCode, options: HttpErrorOptions = {}) {
    super(options.message ?? ERROR_MESSAGES[code], { cause: options.cause })
    this.name = 'HttpError'
    this.code = code
    this.status = ERROR_STATUS[code]
    this.details = options.details
    this.headers = options.headers ?? {}
  }
}

export const isHttpError = (error: unknown): error is HttpError => error instanceof HttpError

export const validationFailed = (details: ErrorDetail[], message?: string): HttpError =>
  new HttpError('validation_failed', { details, ...(message ? { message } : {}) })

export const retryAfterHeaders = (seconds: number): Record<string, string> => ({
  'Retry-After': String(Math.max(1, Math.ceil(seconds))),
})
