import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import { CloudFormationClient } from '@aws-sdk/client-cloudformation'
import { LambdaClient } from '@aws-sdk/client-lambda'
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager'
import { TokenBucketPacer } from '#keys/call-pacer.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import {
  CONTROL_SECRET_FILE,
  CONTROL_SECRET_VARIABLE,
  type ControlSecretSource,
  dataDirAssignment,
  IN_MEMORY,
  localControlAccess,
  localDataDir,
  MANAGEMENT_API_PATH,
} from '#keys/local-control-config.ts'
import { StoreKeyRepository } from '#keys/store-key-repository.ts'
import type { HeldRemovals } from '#ops/keys/held-removals-command.ts'
import { KeyAdminError } from '#ops/keys/key-admin-error.ts'
import { CLI_CALL_RATE, KeyAdmin } from '#ops/keys/key-admin-service.ts'
import {
  deployedKeyUsage,
  type KeyUsageReader,
  localKeyUsage,
  unavailableKeyUsage,
} from '#ops/keys/key-usage-client.ts'
import { AwsStageSync, LocalStageSync, type StageSync } from '#ops/keys/stage-sync-client.ts'
import type { StoreKeyAdmin } from '#ops/keys/store-key-admin.ts'
import {
  deployedMacSecrets,
  localMacSecrets,
  localStoreKeys,
  unavailableMacSecrets,
} from '#ops/keys/store-key-client.ts'
import {
  readStackOutputs,
  type StageOutputs,
  stageOutputsFrom,
} from '#ops/stage/stack-outputs-reader.ts'
import { isStageName, STAGE_NAMES } from '#shared/config/stages-config.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'

/**
 * Where a keys command goes: the local server's control plane by default, or a deployed stage
 * with `--stage`, found by its stack outputs with the operator's AWS credentials and Region.
 */
export interface StageTarget {
  /** `local`, `staging` or `production`. */
  stage: string
  outputs: StageOutputs
  admin: KeyAdmin
  /** The key sync's held removals (`keys held`, `keys confirm`). */
  heldRemovals?: HeldRemovals
  /** The rate limiter's counts and suspensions (keys show, lift, usage, list's TODAY). */
  usage: KeyUsageReader
  /** The stage's store keys; undefined for a stage deployed before it had a store key table. */
  storeKeys: StoreKeyAdmin | undefined
  /** Releases the SDK clients' connections. */
  close(): void
}

export interface TargetChoice {
  /** A deployed stage; undefined for the local server. */
  stage?: string | undefined
  /** The local server's address (default: HOST and PORT as `npm start` reads them). */
  url?: string | undefined
  region?: string | undefined
  env: NodeJS.ProcessEnv
  warn: (message: string) => void
  /** Ctrl-C or SIGTERM (KeyAdminOptions.signal). */
  signal?: AbortSignal | undefined
}

/** The local server `npm start` would listen on, reached over loopback. */
export const localOrigin = (env: NodeJS.ProcessEnv): string => {
  const host = env.HOST?.trim()
  const loopback = host === '::1' ? '[::1]' : '127.0.0.1'
  return `http://${loopback}:${env.PORT?.trim() || '3000'}`
}

/**
 * Why the local server refused the control plane's secret the keys CLI sent, naming where it was
 * read and the command line that works (`npm start`'s banner prints that line too).
 */
export const refusedSecretAdvice = (source: ControlSecretSource, origin: string): string => {
  const fix = `run the keys CLI with the data directory npm start was given: PETSTORE_DATA_DIR=<that directory> npm run keys -- … (npm start's banner prints the command line to use and where its secret is), or give both the same ${CONTROL_SECRET_VARIABLE}`
  switch (source.from) {
    case 'variable':
      return `the local server at ${origin} refused the secret in ${CONTROL_SECRET_VARIABLE}: give the keys CLI the one npm start was given, or unset it to read the data directory's ${CONTROL_SECRET_FILE}`
    case 'memory':
      return `the local server at ${origin} wants its control plane secret, and PETSTORE_DATA_DIR=${IN_MEMORY} keeps none on disk: give npm start and the keys CLI the same ${CONTROL_SECRET_VARIABLE}`
    case 'file':
      return source.found
        ? `the local server at ${origin} refused the control plane secret in ${source.file}, which is another data directory's: ${fix}`
        : `the local server at ${origin} wants its control plane secret, and there is none at ${source.file}: ${fix}`
  }
}

const openLocal = async (
  { warn, signal, env }: TargetChoice,
  origin: string,
  keysCommand: string,
): Promise<StageTarget> => {
  let record: Record<string, string>
  try {
    const response = await fetch(`${origin}/_local/outputs`)
    if (response.status !== 200) throw new Error(String(response.status))
    record = (await response.json()) as Record<string, string>
  } catch {
    throw new KeyAdminError(
      `No local server answers at ${origin}: start it with npm start (or pass --url, or --stage for a deployed stage)`,
    )
  }
  const outputs = stageOutputsFrom(record, `The local server at ${origin}`)
  const access = await localControlAccess(env)
  // One call that needs the secret, before any command: a refusal names the file it was read
  // from. A redirect is not followed (it would carry the secret elsewhere): the command's own
  // calls refuse it, saying so.
  const probe = await access
    .fetch(`${origin}${MANAGEMENT_API_PATH}/usageplans?limit=1`, { redirect: 'manual' })
    .catch(() => undefined)
  await probe?.body?.cancel()
  if (probe?.status === 401) throw new KeyAdminError(refusedSecretAdvice(access.source, origin))
  const client = new APIGatewayClient({
    endpoint: `${origin}${MANAGEMENT_API_PATH}`,
    region: 'us-east-1',
    credentials: access.credentials,
    maxAttempts: 2,
  })
  const sync = new LocalStageSync(origin, access.fetch)
  const admin = new KeyAdmin({
    client,
    outputs,
    sync,
    stage: 'local',
    region: 'us-east-1',
    mirrorWaitMs: 10_000,
    keysCommand,
    warn,
    macSecrets: localMacSecrets(origin, access.fetch),
    ...(signal ? { signal } : {}),
  })
  const usage = localKeyUsage(origin, access.fetch)
  return {
    stage: 'local',
    outputs,
    admin,
    usage,
    storeKeys: admin.storeKeys(localStoreKeys(origin, access.fetch)),
    heldRemovals: sync,
    close: () => client.destroy(),
  }
}

/** What runs a deployed stage's sync: its key-sync function, unless a caller runs it itself. */
export type DeployedSyncFactory = (parts: {
  outputs: StageOutputs
  lambda: LambdaClient
  mirror: KeyMirrorReader
  state?: KeySyncStateRepository
}) => StageSync

const invokeKeySyncFunction: DeployedSyncFactory = ({ outputs, lambda, mirror, state }) =>
  new AwsStageSync({
    lambda,
    functionName: outputs.keySyncFunctionName as string,
    mirror,
    tableName: outputs.keyMirrorTableName as string,
    ...(state ? { state } : {}),
  })

/**
 * A deployed stage found by its stack outputs. `syncWith` replaces the Lambda invoke of its key
 * sync: the moto pass (test/moto) runs the same handler in-process, as moto runs no Lambda code.
 */
export const openDeployedStage = async (
  { stage, region, warn, signal }: Omit<TargetChoice, 'url' | 'env'> & { stage: string },
  syncWith: DeployedSyncFactory = invokeKeySyncFunction,
): Promise<StageTarget> => {
  const keysCommand = `npm run keys -- --stage ${stage}${region ? ` --region ${region}` : ''}`
  const config = region ? { region } : {}
  const cloudFormation = new CloudFormationClient(config)
  const api = new APIGatewayClient({ ...config, maxAttempts: 5 })
  const lambda = new LambdaClient(config)
  const documentClient = createDocumentClient(config)
  const secrets = new SecretsManagerClient(config)
  const close = () => {
    for (const client of [cloudFormation, api, lambda, documentClient, secrets]) client.destroy()
  }
  try {
    const outputs = await readStackOutputs(cloudFormation, stage)
    const mirror = new KeyMirrorReader({
      client: documentClient,
      tableName: outputs.keyMirrorTableName as string,
    })
    const state = new KeySyncStateRepository({
      client: documentClient,
      tableName: outputs.keyMirrorTableName as string,
    })
    const sync = syncWith({ outputs, lambda, mirror, state })
    const admin = new KeyAdmin({
      client: api,
      outputs,
      sync,
      stage,
      region: await api.config.region(),
      pacer: new TokenBucketPacer(CLI_CALL_RATE),
      keysCommand,
      warn,
      macSecrets:
        outputs.keyMacSecretArn && outputs.keyMacVersion
          ? deployedMacSecrets(secrets, outputs.keyMacSecretArn, outputs.keyMacVersion)
          : unavailableMacSecrets(
              `The data stack of ${stage} has no output KeyMacSecretArn: deploy the stage first (keys the CLI makes carry the stage's MAC)`,
            ),
      ...(signal ? { signal } : {}),
    })
    const usage = outputs.rateLimitTableName
      ? deployedKeyUsage(documentClient, outputs.rateLimitTableName)
      : unavailableKeyUsage(
          `The data stack of ${stage} has no output RateLimitTableName: deploy the stage first`,
        )
    return {
      stage,
      outputs,
      admin,
      usage,
      storeKeys: outputs.storeKeyTableName
        ? admin.storeKeys(
            new StoreKeyRepository({
              client: documentClient,
              tableName: outputs.storeKeyTableName,
            }),
          )
        : undefined,
      close,
      ...(sync instanceof AwsStageSync ? { heldRemovals: sync } : {}),
    }
  } catch (error) {
    close()
    // A missing Region, stack, output or permission: the message says what to set (no stack).
    throw error instanceof KeyAdminError ? error : new KeyAdminError((error as Error).message)
  }
}

/** Hosts of this machine: the only ones the data directory's control-plane secret goes to. */
const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/**
 * The local server's origin from `--url`: the server's address or its API's base URL
 * (`http://127.0.0.1:3000/v1`, what npm start prints) alike. Only a loopback address: the keys
 * CLI sends the control-plane secret with every call, over plain HTTP.
 */
export const localServerOrigin = (url: string): string => {
  const parsed = URL.parse(url)
  if (parsed?.protocol !== 'http:') {
    throw new KeyAdminError(
      `--url must be the local server's address, such as http://127.0.0.1:3000 (got "${url}"); for a deployed stage use --stage`,
    )
  }
  if (!LOOPBACK_HOST.test(parsed.hostname)) {
    throw new KeyAdminError(
      `--url ${parsed.origin} is not this machine: the keys CLI sends the local control plane's secret only to 127.0.0.1, ::1 or localhost. For a deployed stage use --stage; for a server elsewhere, run the keys CLI there (or forward its port: ssh -L 3000:127.0.0.1:3000 host)`,
    )
  }
  return parsed.origin
}

export const openStageTarget = async ({
  stage,
  url,
  region,
  env,
  warn,
  signal,
}: TargetChoice): Promise<StageTarget> => {
  if (stage === undefined) {
    const origin = url === undefined ? localOrigin(env) : localServerOrigin(url)
    // The hints a command prints carry the data directory it read the secret from.
    const dataDir = localDataDir(env)
    const assignment =
      env[CONTROL_SECRET_VARIABLE]?.trim() || dataDir === IN_MEMORY
        ? ''
        : dataDirAssignment(dataDir)
    const keysCommand = `${assignment}npm run keys --${url === undefined ? '' : ` --url ${origin}`}`
    return openLocal({ env, warn, signal }, origin, keysCommand)
  }
  if (!isStageName(stage)) {
    throw new KeyAdminError(`--stage must be one of ${STAGE_NAMES.join(', ')}`)
  }
  return openDeployedStage({ stage, region, warn, signal })
}
