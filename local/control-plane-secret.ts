import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { chmod, readFile } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { join, resolve } from 'node:path'
import { IN_MEMORY } from './embedded-dynamo.ts'
import { keptSecret } from './local-environment.ts'

/**
 * The local control plane's secret: what the project's own tools (the keys CLI, the smoke test,
 * the server's key sync, the tests) send with every request under `/_local/` that reads or changes
 * keys, so a port forwarded from this machine (ssh -R, an IDE, a tunnel), which arrives from
 * loopback too, gives nothing away. One per data directory, created on first start in
 * `<PETSTORE_DATA_DIR>/control-plane-secret` (owner-only); `PETSTORE_LOCAL_SECRET` replaces it
 * (for `:memory:`, whose secret is otherwise a fresh one per process and never written down).
 * The keys CLI finds it the way `npm start` does: the variable, or the file of the data directory.
 */
export const CONTROL_SECRET_FILE = 'control-plane-secret'
export const CONTROL_SECRET_VARIABLE = 'PETSTORE_LOCAL_SECRET'
/** Plain HTTP callers send the secret in this header. */
export const CONTROL_SECRET_HEADER = 'x-petstore-local-secret'
/** URL-safe, so it also serves as an AWS access key id (which the SDKs send in clear). */
export const CONTROL_SECRET_PATTERN = /^[A-Za-z0-9._~-]{32,128}$/

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

/** Credentials for an APIGatewayClient of the local control plane. */
export const controlSecretCredentials = (secret: string) => ({
  accessKeyId: secret,
  secretAccessKey: 'local',
})

/** A fetch that sends the secret with every request. */
export const withControlSecret =
  (secret: string, fetchImpl: typeof fetch = fetch): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers)
    headers.set(CONTROL_SECRET_HEADER, secret)
    return fetchImpl(input, { ...init, headers })
  }

/** The secret as the keys CLI finds it: the variable, or the file of the data directory. */
const findControlSecret = async (env: NodeJS.ProcessEnv): Promise<string | undefined> => {
  const fromEnv = env[CONTROL_SECRET_VARIABLE]?.trim()
  if (fromEnv) return fromEnv
  const dataDir = env.PETSTORE_DATA_DIR?.trim() || '.petstore'
  if (dataDir === IN_MEMORY) return undefined
  try {
    return (await readFile(join(dataDir, CONTROL_SECRET_FILE), 'utf8')).trim() || undefined
  } catch {
    // No secret here: the control plane's 401 says where it looked.
    return undefined
  }
}

/**
 * What a client of the local control plane needs: SDK credentials and a fetch that carry the
 * secret found in `env` (without one the control plane answers 401 saying where to find it).
 */
export const localControlAccess = async (env: NodeJS.ProcessEnv) => {
  const secret = (await findControlSecret(env)) ?? 'none'
  return { credentials: controlSecretCredentials(secret), fetch: withControlSecret(secret) }
}
