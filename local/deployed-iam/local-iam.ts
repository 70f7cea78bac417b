import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb'
import { RUNTIME_VARIABLES } from '#local/bundles/bundle-functions.ts'
import { type DynamoIamGuard, type GuardedTable, startDynamoIamGuard } from './dynamo-iam-guard.ts'
import { type FunctionRole, stageRoles } from './stage-roles.ts'
import { readAssemblyStage, type SynthesizedStage, synthesizedStage } from './synthesized-stage.ts'

// The local server's IAM: each function's deployed role, from the stage's templates, enforced.

/** The account the local stage's ARNs name (no AWS account is involved). */
export const LOCAL_ACCOUNT = '000000000000'

export interface LocalIamOptions {
  stage: SynthesizedStage
  /** The DynamoDB the functions' requests go on to once allowed. */
  upstream: string
  /** The local stage's function environment (local-environment.ts). */
  environment: Record<string, string>
  /** The local tables' names by the route table's names of them (`pets`, `rateLimits`…). */
  tables: Record<string, string>
  /** The CreateTable input of each local table, by the same keys: its partition key. */
  definitions: Record<string, CreateTableCommandInput>
  onDenied?: (message: string) => void
  /** Keep every authorization (tests: DynamoIamGuard.requests). */
  record?: boolean
}

export interface LocalIam {
  guard: DynamoIamGuard
  roles: ReadonlyMap<string, FunctionRole>
  /**
   * The variables to set and unset for a function of the sources: those of the local stage its
   * template gives it (a variable its template does not name is unset: the cursor secret reaches
   * only the functions whose templates reference it) and its own DynamoDB endpoint.
   */
  environmentOf(service: string): Record<string, string | undefined>
  /** Policies the templates name but do not hold, which go unenforced (said in the banner). */
  unresolved(): string[]
}

const runtime = new Set<string>(RUNTIME_VARIABLES)

/** Starts the guard in front of `upstream` with every function's role from the templates. */
export const startLocalIam = async (options: LocalIamOptions): Promise<LocalIam> => {
  const region = options.environment.AWS_REGION ?? 'us-east-1'
  const roles = stageRoles(options.stage, {
    region,
    account: LOCAL_ACCOUNT,
    variables: options.environment,
  })
  const tables = new Map<string, GuardedTable>(
    Object.entries(options.tables).map(([key, name]) => [
      name,
      {
        key,
        partitionKey: String(
          options.definitions[key]?.KeySchema?.find((k) => k.KeyType === 'HASH')?.AttributeName,
        ),
      },
    ]),
  )
  const guard = await startDynamoIamGuard({
    upstream: options.upstream,
    roles,
    tables,
    region,
    account: LOCAL_ACCOUNT,
    ...(options.onDenied ? { onDenied: options.onDenied } : {}),
    ...(options.record ? { record: true } : {}),
  })
  return {
    guard,
    roles,
    environmentOf: (service) => {
      const role = roles.get(service)
      const given = new Set(role?.variables ?? [])
      const environment: Record<string, string | undefined> = {}
      for (const [name, value] of Object.entries(options.environment)) {
        if (!runtime.has(name)) environment[name] = given.has(name) ? value : undefined
      }
      environment.DYNAMODB_ENDPOINT = guard.endpointFor(service)
      return environment
    },
    unresolved: () =>
      [...roles.values()].flatMap((role) => role.unresolved.map((p) => `${role.service}: ${p}`)),
  }
}

/**
 * The local server's IAM for its configuration: the roles of the assembly it runs (`--bundles`),
 * else of the synthesized sources (kept by input digest: synthesized-stage.ts). None against an
 * HTTPS endpoint (AWS's own DynamoDB), which checks the operator's credentials itself and whose
 * signatures a forwarded request would break.
 */
export const localIamFor = async (
  config: { bundles?: { assemblyDir: string; stage: string } | undefined },
  options: Omit<LocalIamOptions, 'stage'>,
): Promise<LocalIam | undefined> => {
  if (new URL(options.upstream).protocol === 'https:') return undefined
  const stage = config.bundles
    ? await readAssemblyStage(config.bundles.assemblyDir, config.bundles.stage)
    : await synthesizedStage()
  return startLocalIam({ ...options, stage })
}

/**
 * Imports a function's module with its own variables in place, as Lambda starts it with its own:
 * the process's are put back after. A cold start that fails for a variable its template does not
 * give it says so, with where such a variable comes from.
 */
export const withFunctionEnvironment = async <T>(
  service: string,
  environment: Record<string, string | undefined>,
  load: () => Promise<T>,
): Promise<T> => {
  const saved = Object.fromEntries(
    Object.keys(environment).map((name) => [name, process.env[name]]),
  )
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
  apply(environment)
  try {
    return await load()
  } catch (error) {
    const missing = /Missing required environment variable (\S+)/.exec(
      (error as Error).message,
    )?.[1]
    if (missing && missing in environment && environment[missing] === undefined) {
      throw new Error(
        `${service}'s cold start failed: its synthesized template does not give it ${missing} (on AWS its cold start fails the same way). A function's variables come from its route entry through infra/constructs/operation-functions-construct.ts: a table's name with the table's level (tables), the cursor secret with \`cursors: true\` (shared/config/routes-config.ts)`,
        { cause: error },
      )
    }
    throw error
  } finally {
    apply(saved)
  }
}
