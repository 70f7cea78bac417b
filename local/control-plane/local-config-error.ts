/**
 * A setting of `npm start` that cannot be used: the server's settings (local-config.ts) and the
 * control plane's files raise it alike, and the start prints its message without a stack.
 */
export class LocalConfigError extends Error {
  override name = 'LocalConfigError'
}

/** What a local key must look like (isWellFormedApiKey), for messages that cannot show the key. */
export const API_KEY_FORMAT =
  '20 to 128 characters of A-Z a-z 0-9 - . _ ~ + /, then at most two = of padding (128 characters in all)'
