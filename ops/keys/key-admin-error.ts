import { isThrottlingError } from '@smithy/service-error-classification'

/** A failure the operator can act on: printed as it is, without a stack. */
export class KeyAdminError extends Error {
  override name = 'KeyAdminError'
  /** The change is made in API Gateway; only seeing it in force failed (the mirror wait). */
  readonly made: boolean
  /** A key the command made that still exists (a create cut off after the key was made). */
  readonly keptKeyId: string | undefined

  constructor(
    message: string,
    options: ErrorOptions & { made?: boolean; keptKeyId?: string | undefined } = {},
  ) {
    super(message, options)
    this.made = options.made ?? false
    this.keptKeyId = options.keptKeyId
  }
}

/**
 * The one answer to a key id or name the stage does not have, whichever command looked it up:
 * `list` shows what it has. `shown` is the id or name as a message may repeat it (masked).
 */
export const noSuchKey = (shown: string, stage: string, keysCommand: string): KeyAdminError =>
  new KeyAdminError(
    `No key ${shown} on stage ${stage}: ${keysCommand} list shows its keys, by id and name`,
  )

type SdkError = Parameters<typeof isThrottlingError>[0]

export const isThrottled = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  isThrottlingError(((error as { cause?: unknown }).cause ?? error) as SdkError)

/** What failed, in words that name no key value: the error's name, HTTP status and message. */
export const causeOf = (error: unknown): string => {
  if (error instanceof KeyAdminError) return error.message
  const { name, message, $metadata } = (error ?? {}) as {
    name?: string
    message?: string
    $metadata?: { httpStatusCode?: number }
  }
  const status = $metadata?.httpStatusCode
  return `${name ?? 'Error'}${status === undefined ? '' : `, HTTP ${status}`}${message ? `: ${message}` : ''}`
}

/** A Ctrl-C (SIGINT) or SIGTERM the CLI passed on, at a step boundary or during the wait. */
export class Interrupted extends Error {
  override name = 'Interrupted'
  override message = 'interrupted (SIGINT or SIGTERM)'
}
