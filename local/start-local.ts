import { mkdir } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { functionEntry } from '#functions/function-entries.ts'
import { keyFingerprint } from '#shared/auth/key-store.ts'
import { formatPlanLimits, PLAN_NAMES } from '#shared/config/plans-config.ts'
import { API_VERSION_PATH, ROUTES } from '#shared/config/routes-config.ts'
import { petTableDefinition, rateLimitTableDefinition } from '#shared/data/table-schema.ts'
import {
  type EmbeddedDynamo,
  ensureTable,
  IN_MEMORY,
  startEmbeddedDynamo,
} from './embedded-dynamo.ts'
import { type LocalConfig, LocalConfigError, readLocalConfig } from './local-config.ts'
import { createLocalGateway, type ProxyHandler } from './local-gateway.ts'
import {
  generateApiKey,
  keyFilePath,
  type LocalKeyEntry,
  LocalKeyStore,
  readKeyFile,
  writeKeyFile,
} from './local-key-store.ts'

/**
 * `npm start`: the whole API on one machine. Starts the embedded DynamoDB (or uses
 * DYNAMODB_ENDPOINT), creates the tables, gives the Lambda entries the environment they get on
 * AWS, and serves them behind the local gateway at http://HOST:PORT/v1.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
export const LOCAL_TABLES = {
  pets: 'petstore-local-pets',
  rateLimits: 'petstore-local-rate-limits',
}

/** Keys to accept; creates one per plan when none exist anywhere (decisions.md). */
const prepareKeys = async (config: LocalConfig) => {
  const keyFile = config.dataDir === IN_MEMORY ? undefined : keyFilePath(config.dataDir)
  const fileKeys = keyFile ? await readKeyFile(keyFile) : []
  const activeFileKeys = fileKeys.filter((entry) => entry.revokedAt === undefined)
  let created: LocalKeyEntry[] = []
  if (config.apiKeys.length === 0 && activeFileKeys.length === 0) {
    const createdAt = new Date().toISOString()
    created = PLAN_NAMES.map((plan) => ({ plan, key: generateApiKey(plan), createdAt }))
    if (keyFile) await writeKeyFile(keyFile, [...fileKeys, ...created])
  }
  const store = new LocalKeyStore({
    envKeys: config.apiKeys,
    keyFile,
    enterpriseLimits: config.enterpriseLimits,
    ...(keyFile ? {} : { memoryKeys: created }),
  })
  return { store, keyFile, created, activeFileKeys }
}

/** The environment each function gets from CDK on AWS, pointed at the local tables. */
const functionEnvironment = (config: LocalConfig, endpoint: string, embedded: boolean) => {
  const env = process.env
  env.TABLE_NAME = LOCAL_TABLES.pets
  env.RATE_LIMIT_TABLE_NAME = LOCAL_TABLES.rateLimits
  env.DYNAMODB_ENDPOINT = endpoint
  env.ENTERPRISE_LIMITS = formatPlanLimits(config.enterpriseLimits)
  env.AWS_REGION ??= 'us-east-1'
  if (embedded || !env.AWS_ACCESS_KEY_ID) {
    // The embedded DynamoDB accepts any credentials; the SDK insists on having some.
    env.AWS_ACCESS_KEY_ID ??= 'local'
    env.AWS_SECRET_ACCESS_KEY ??= 'local'
  }
  // No X-Ray daemon or CloudWatch here: keep tracing and EMF metrics off, logs to warnings.
  env.POWERTOOLS_TRACE_ENABLED ??= 'false'
  env.POWERTOOLS_METRICS_DISABLED ??= 'true'
  env.POWERTOOLS_LOG_LEVEL ??= 'WARN'
}

const listen = (server: Server, config: LocalConfig) =>
  new Promise<AddressInfo>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(config.port, config.host, () => resolveListen(server.address() as AddressInfo))
  })

export const startLocal = async (config: LocalConfig) => {
  let embedded: EmbeddedDynamo | undefined
  if (config.dataDir !== IN_MEMORY) await mkdir(config.dataDir, { recursive: true })
  if (!config.dynamoEndpoint) embedded = await startEmbeddedDynamo(config.dataDir)
  const endpoint = config.dynamoEndpoint ?? (embedded?.endpoint as string)
  functionEnvironment(config, endpoint, embedded !== undefined)

  const admin = new DynamoDBClient({ endpoint })
  await ensureTable(admin, petTableDefinition(LOCAL_TABLES.pets))
  await ensureTable(admin, rateLimitTableDefinition(LOCAL_TABLES.rateLimits))
  admin.destroy()

  const keys = await prepareKeys(config)
  // The same entry modules Lambda loads, imported after their environment is in place.
  const handlers = Object.fromEntries(
    await Promise.all(
      ROUTES.map(async (route) => {
        const module = (await import(pathToFileURL(join(ROOT, functionEntry(route))).href)) as {
          handler: ProxyHandler
        }
        return [route.operationId, module.handler] as const
      }),
    ),
  ) as Record<(typeof ROUTES)[number]['operationId'], ProxyHandler>
  const { createAuthorizerHandler } = await import('#functions/authorizer/authorizer-handler.ts')
  const { logger } = await import('#shared/observability/logger.ts')

  const server = createServer(
    createLocalGateway({
      handlers,
      authorizer: createAuthorizerHandler({ keyStore: keys.store, logger }),
      onError: (message, error) => logger.error(message, { error }),
    }),
  )
  server.keepAliveTimeout = 5_000
  let address: AddressInfo
  try {
    address = await listen(server, config)
  } catch (error) {
    await embedded?.close()
    throw error
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const baseUrl = `http://${host}:${address.port}${API_VERSION_PATH}`

  const stop = async () => {
    // Stop accepting, let in-flight requests finish, then close the datastore (flushes LevelDB).
    await new Promise<void>((resolveClose) => {
      server.close(() => resolveClose())
      server.closeIdleConnections()
    })
    await embedded?.close()
  }
  return { baseUrl, keys, endpoint, embedded: embedded !== undefined, stop }
}

const main = async () => {
  let config: LocalConfig
  try {
    config = readLocalConfig()
  } catch (error) {
    if (error instanceof LocalConfigError) {
      process.stderr.write(`petstore: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
  let local: Awaited<ReturnType<typeof startLocal>>
  try {
    local = await startLocal(config)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      process.stderr.write(
        `petstore: cannot listen on ${config.host}:${config.port} (${code}). Set PORT to a free port, e.g. PORT=3001 npm start\n`,
      )
      process.exit(1)
    }
    throw error
  }

  // One write, so whoever reads the banner (people, scripts, tests) gets it whole.
  const banner = [
    `Pet store API listening at ${local.baseUrl}`,
    `DynamoDB: ${local.embedded ? `embedded, data in ${config.dataDir === IN_MEMORY ? 'memory (not kept)' : resolve(config.dataDir)}` : local.endpoint}`,
    'API keys (send as "Authorization: Bearer <key>"):',
    ...local.keys.created.map((entry) => `  ${entry.plan.padEnd(10)} ${entry.key}   (new)`),
    ...config.apiKeys.map(
      (entry) =>
        `  ${entry.plan.padEnd(10)} from PETSTORE_API_KEYS (id ${keyFingerprint(entry.key)})`,
    ),
    ...(local.keys.keyFile && local.keys.activeFileKeys.length > 0
      ? [
          `  ${local.keys.activeFileKeys.length} key(s) in ${resolve(local.keys.keyFile)}: npm run keys -- list`,
        ]
      : []),
    `Try: curl -H "Authorization: Bearer <key>" ${local.baseUrl}/pets`,
  ]
  process.stdout.write(`${banner.join('\n')}\n`)

  let stopping = false
  const shutdown = (signal: string) => {
    if (stopping) return
    stopping = true
    process.stdout.write(`Received ${signal}, shutting down\n`)
    local.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`petstore: shutdown failed: ${(error as Error).message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`petstore: failed to start: ${(error as Error).stack ?? String(error)}\n`)
    process.exit(1)
  })
}
