import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmod } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { join, resolve } from 'node:path'
import {
  CONTROL_SECRET_FILE,
  CONTROL_SECRET_HEADER,
  CONTROL_SECRET_VARIABLE,
  IN_MEMORY,
} from '#keys/local-control-config.ts'
import { keptSecret } from './kept-secret-file.ts'

/** The server's secret: the variable when set, else the data directory's (random with :memory:). */
export const localControlSecret = async (
  dataDir: string,
  fromEnv: string | undefined,
): Promise<string> => {
  if (fromEnv !== undefined) return fromEnv
  if (dataDir === IN_MEMORY) return randomBytes(32).toString('hex')
  const file = join(dataDir, CONTROL_SECRET_FILE)
  const secret = await keptSecret(file)
  // Owner-only even when the file was copied in or its mode changed since.
  await chmod(file, 0o600)
  return secret
}

/** Where the banner says the secret is. */
export const controlSecretLocation = (dataDir: string, fromEnv: string | undefined): string =>
  fromEnv !== undefined
    ? `${CONTROL_SECRET_VARIABLE} (from the environment)`
    : dataDir === IN_MEMORY
      ? `this process only (data in memory; set ${CONTROL_SECRET_VARIABLE} to share one with npm run keys)`
      : resolve(dataDir, CONTROL_SECRET_FILE)

/**
 * The secret a request carries: the header, or the access key id of its AWS signature (an AWS
 * SDK or the AWS CLI with the secret as access key id and any secret access key).
 */
const presentedSecret = (req: IncomingMessage): string | undefined => {
  const header = req.headers[CONTROL_SECRET_HEADER]
  if (typeof header === 'string') return header
  return /^AWS4-HMAC-SHA256\s+Credential=([^/\s,]+)\//.exec(req.headers.authorization ?? '')?.[1]
}

const digest = (text: string) => createHash('sha256').update(text).digest()

/** Whether a request carries the secret (compared in constant time). */
export const carriesControlSecret = (req: IncomingMessage, secret: string): boolean => {
  const presented = presentedSecret(req)
  return presented !== undefined && timingSafeEqual(digest(presented), digest(secret))
}
