import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'

/**
 * The local server's control paths, beside the API under `/v1` (local/control-plane/control-plane-handler.ts
 * serves them; the keys CLI in ops/ calls them): here so an operator tool never imports the
 * development server.
 */
export const LOCAL_CONTROL_PREFIX = '/_local'
/** The part of API Gateway's management API the local control plane serves. */
export const MANAGEMENT_API_PATH = `${LOCAL_CONTROL_PREFIX}/apigateway`

/** The data directory that keeps nothing: the embedded DynamoDB in memory, no secret file. */
export const IN_MEMORY = ':memory:'
/** Where `npm start` keeps its data unless PETSTORE_DATA_DIR says otherwise. */
export const DEFAULT_DATA_DIR = '.petstore'

/** The data directory `npm start` uses in `env`, as the keys CLI finds it too. */
export const localDataDir = (env: NodeJS.ProcessEnv): string =>
  env.PETSTORE_DATA_DIR?.trim() || DEFAULT_DATA_DIR

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

/** Where the keys CLI took the secret from, so that a refused one is named with its fix. */
export type ControlSecretSource =
  | { from: 'variable' }
  | { from: 'file'; file: string; found: boolean }
  | { from: 'memory' }

/** The secret as the keys CLI finds it: the variable, or the file of the data directory. */
const findControlSecret = async (
  env: NodeJS.ProcessEnv,
): Promise<{ secret: string | undefined; source: ControlSecretSource }> => {
  const fromEnv = env[CONTROL_SECRET_VARIABLE]?.trim()
  if (fromEnv) return { secret: fromEnv, source: { from: 'variable' } }
  const dataDir = localDataDir(env)
  if (dataDir === IN_MEMORY) return { secret: undefined, source: { from: 'memory' } }
  const file = resolve(dataDir, CONTROL_SECRET_FILE)
  try {
    const secret = (await readFile(file, 'utf8')).trim() || undefined
    return { secret, source: { from: 'file', file, found: secret !== undefined } }
  } catch {
    return { secret: undefined, source: { from: 'file', file, found: false } }
  }
}

/**
 * What a client of the local control plane needs: SDK credentials and a fetch that carry the
 * secret found in `env` (without one the control plane answers 401), and where it was found.
 */
export const localControlAccess = async (env: NodeJS.ProcessEnv) => {
  const { secret = 'none', source } = await findControlSecret(env)
  return { credentials: controlSecretCredentials(secret), fetch: withControlSecret(secret), source }
}

/** A word a POSIX shell reads back as itself. */
const shellWord = (text: string): string =>
  /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`

/**
 * What goes before `npm run keys` so that it reads this data directory's secret, as `npm start`
 * does: nothing for the default one, else `PETSTORE_DATA_DIR=<absolute path> ` (`npm run` runs in
 * the repository, wherever the shell is).
 */
export const dataDirAssignment = (dataDir: string): string =>
  resolve(dataDir) === resolve(DEFAULT_DATA_DIR)
    ? ''
    : `PETSTORE_DATA_DIR=${shellWord(resolve(dataDir))} `
