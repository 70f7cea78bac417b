import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import { loadBundleFunctions } from '#local/bundles/bundle-functions.ts'
import { type LocalIam, withFunctionEnvironment } from '#local/deployed-iam/local-iam.ts'
import type { ProxyHandler, TokenAuthorizer } from '#local/gateway/local-gateway.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import type { LocalConfig } from './local-config.ts'

// The functions the local server runs: the Lambda entries of the sources, or a cloud assembly's bundles.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** How many servers this process started: each after the first loads fresh function instances. */
let serversStarted = 0

/**
 * The URL of a Lambda entry module for the n-th server of this process. An entry builds its
 * dependencies from the environment once, at import, as a Lambda instance does at its cold start;
 * a second server in one process (tests run many) gets instances of its own, by a URL of its own,
 * so its functions read its tables and endpoint, not the first server's. `npm start` runs one.
 */
const entryUrl = (entry: string, server: number): string => {
  const url = pathToFileURL(join(ROOT, entry))
  if (server > 1) url.searchParams.set('server', String(server))
  return url.href
}

const loadSourceHandlers = async (server: number, iam: LocalIam | undefined) => {
  // The same entry modules Lambda loads, each imported with its own variables in place (those
  // its template gives it, its role's DynamoDB endpoint), one after another.
  const load = <T>(service: string, entry: string) => {
    const importEntry = () => import(entryUrl(entry, server)) as Promise<T>
    return iam
      ? withFunctionEnvironment(service, iam.environmentOf(service), importEntry)
      : importEntry()
  }
  const handlers: Partial<Record<(typeof ROUTES)[number]['operationId'], ProxyHandler>> = {}
  for (const route of ROUTES) {
    handlers[route.operationId] = (
      await load<{ handler: ProxyHandler }>(route.operationId, functionEntry(route))
    ).handler
  }
  // The authorizer's own entry too: it reads the key mirror (KEY_MIRROR_TABLE_NAME), as on AWS.
  const authorizer = await load<{ handler: TokenAuthorizer }>('authorizer', AUTHORIZER_ENTRY)
  return {
    handlers: handlers as Record<(typeof ROUTES)[number]['operationId'], ProxyHandler>,
    authorizer: authorizer.handler,
  }
}

/**
 * The functions the gateway invokes: the TypeScript entries in this process, or (config.bundles)
 * the bundles of a cloud assembly, each in a process of its own as Lambda runs them; each behind
 * its deployed role (local/deployed-iam/).
 */
export const loadFunctions = async (
  config: LocalConfig,
  environment: Record<string, string>,
  iam: LocalIam | undefined,
) => {
  if (!config.bundles) {
    serversStarted += 1
    return { ...(await loadSourceHandlers(serversStarted, iam)), bundles: undefined }
  }
  const bundles = await loadBundleFunctions(
    config.bundles,
    environment,
    iam ? (service) => iam.guard.endpointFor(service) : undefined,
  )
  return { handlers: bundles.handlers, authorizer: bundles.authorizer, bundles }
}
