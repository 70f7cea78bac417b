import { createHash } from 'node:crypto'

/**
 * SHA-256 of a secret (an Authorization header, an API key), for the local gateway's long-lived
 * maps: they hold this digest, never the secret in clear.
 */
export const secretDigest = (secret: string): string =>
  createHash('sha256').update(secret).digest('hex')
