import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import {
  Alias,
  Architecture,
  type CfnFunction,
  type IFunction,
  Runtime,
  Tracing,
} from 'aws-cdk-lib/aws-lambda'
import {
  LogLevel,
  NodejsFunction,
  OutputFormat,
  SourceMapMode,
} from 'aws-cdk-lib/aws-lambda-nodejs'
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { ignoreCfnLintRules } from '#infra/config/cfn-lint-config.ts'
import { logRemovalPolicy, metricsNamespace, type StageConfig } from '#infra/config/stage-config.ts'
import {
  actionsOf,
  TABLE_ACCESS_LEVELS,
  type TableAccess,
  type TableGrant,
} from '#shared/config/table-access-config.ts'

/** The repository root: esbuild's project root, where entries and the lock file live. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The Lambda runtime this project develops on (the `node` devDependency is Node 24). */
export const FUNCTION_RUNTIME = Runtime.NODEJS_24_X

/** Every DynamoDB action any level grants (the monitoring construct watches these operations). */
export const TABLE_ACTIONS: readonly string[] = [
  ...new Set(
    (Object.keys(TABLE_ACCESS_LEVELS) as TableAccess[]).flatMap((access) =>
      actionsOf(access).map((action) => `dynamodb:${action}`),
    ),
  ),
]

export interface TableBinding {
  /** The environment variable that carries the table name. */
  envVar: string
  /**
   * The GSIs a level's index grants (LIST, QUERY) cover: the ones the route names, each by its
   * own ARN, so no index wildcard is granted and no other index may be queried.
   */
  indexNames?: readonly string[]
}

export interface PetstoreFunctionProps {
  /** Entry file relative to the repository root, e.g. functionEntry(route). */
  entry: string
  /** POWERTOOLS_SERVICE_NAME: the operation id, or `authorizer`. */
  serviceName: string
  description: string
  metricsNamespace: string
  logGroupName: string
  logRetention: RetentionDays
  /** Of the log group: production keeps its logs after a stack is deleted. */
  logRemovalPolicy: RemovalPolicy
  memorySize?: number
  /** From FUNCTION_TIMEOUT_SECONDS, so the local gateway and the tests use the same. */
  timeout: Duration
  environment?: Record<string, string>
  /**
   * Invoked through a `live` alias on the current version (API routes and the authorizer), so a
   * deploy can shift traffic to a new version gradually and roll it back (see
   * gradual-deployment-construct.ts). Without it, callers invoke $LATEST.
   */
  liveAlias?: boolean
  /** Reserved (and so capped) concurrency; unset: the account's unreserved pool. */
  reservedConcurrentExecutions?: number
}

/** The alias every caller invokes: traffic shifting and rollback move it between versions. */
export const LIVE_ALIAS = 'live'

/** The props every function of a stage shares: its metrics namespace and its logs' lifetime. */
export type StageFunctionDefaults = Pick<
  PetstoreFunctionProps,
  'metricsNamespace' | 'logRetention' | 'logRemovalPolicy'
>

export const stageFunctionDefaults = (config: StageConfig): StageFunctionDefaults => ({
  metricsNamespace: metricsNamespace(config.stage),
  logRetention: config.logRetention,
  logRemovalPolicy: logRemovalPolicy(config),
})

/**
 * A NodejsFunction with the project's shared defaults: Node 24 on arm64, one minified ESM
 * bundle with the AWS SDK inside (a pinned SDK version, not whatever the runtime ships), a source
 * map beside it (read only when an error is logged: shared/observability/original-stack.ts, so
 * no `--enable-source-maps`), active X-Ray tracing by Lambda itself (no SDK in the bundle), an explicit log group with retention, and a role of its own that
 * starts with nothing but writing to that log group (no AWSLambdaBasicExecutionRole).
 */
export class PetstoreFunction extends Construct {
  readonly function: NodejsFunction
  readonly role: IRole
  readonly logGroup: LogGroup
  /** The `live` alias, when the function has one (liveAlias). */
  readonly alias: Alias | undefined

  constructor(scope: Construct, id: string, props: PetstoreFunctionProps) {
    super(scope, id)
    this.logGroup = new LogGroup(this, 'LogGroup', {
      logGroupName: props.logGroupName,
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    })
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.description}`,
    })
    this.logGroup.grantWrite(role)
    this.role = role

    this.function = new NodejsFunction(this, 'Function', {
      entry: join(REPO_ROOT, props.entry),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: FUNCTION_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      description: props.description,
      role,
      logGroup: this.logGroup,
      tracing: Tracing.ACTIVE,
      environment: {
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        // Events carry API keys: never log them.
        POWERTOOLS_LOGGER_LOG_EVENT: 'false',
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.ESM,
        target: FUNCTION_BUNDLING.target,
        mainFields: [...FUNCTION_BUNDLING.mainFields],
        banner: FUNCTION_BUNDLING.banner,
        minify: FUNCTION_BUNDLING.minify,
        sourceMap: FUNCTION_BUNDLING.sourcemap,
        sourceMapMode: SourceMapMode.DEFAULT,
        sourcesContent: FUNCTION_BUNDLING.sourcesContent,
        bundleAwsSDK: true,
        externalModules: [],
        esbuildArgs: {
          '--alias': Object.entries(FUNCTION_BUNDLING.alias).map(([from, to]) => `${from}=${to}`),
        },
        logLevel: LogLevel.WARNING,
      },
    })
    ignoreCfnLintRules(this.function.node.defaultChild as CfnFunction, {
      W3005:
        "aws-cdk-lib's Function depends on its role construct, so DependsOn names the role's default policy (needed: the function must not run before its grants exist) and the role itself, which Role's GetAtt already implies.",
    })
    this.alias = props.liveAlias
      ? new Alias(this, 'LiveAlias', {
          aliasName: LIVE_ALIAS,
          version: this.function.currentVersion,
        })
      : undefined
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords do not support resource-level permissions. Tests check that no other action is granted on "*".',
    })
  }

  /** What callers invoke: the live alias when there is one. */
  get invokeTarget(): IFunction {
    return this.alias ?? this.function
  }

  /**
   * Least-privilege access to a table (a level of table-access-config.ts) and its name in
   * `binding.envVar`. Only
   * the table and the named indexes are resources: no wildcard, no other table.
   */
  bindTable(table: ITable, access: TableAccess, binding: TableBinding): this {
    const indexArns = (binding.indexNames ?? []).map((name) => `${table.tableArn}/index/${name}`)
    const grants = TABLE_ACCESS_LEVELS[access] as readonly TableGrant[]
    if (indexArns.length > 0 && !grants.some((grant) => grant.on === 'indexes')) {
      throw new Error(`${access} access queries no index, yet indexes were named`)
    }
    for (const grant of grants) {
      const resources = grant.on === 'table' ? [table.tableArn] : indexArns
      if (resources.length === 0) {
        throw new Error(
          `${access} access queries indexes: name the ones the function reads (a route's \`indexes\`, shared/config/routes-config.ts)`,
        )
      }
      const actions = grant.actions.map((action) => `dynamodb:${action}`)
      this.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources }))
    }
    this.function.addEnvironment(binding.envVar, table.tableName)
    return this
  }
}
