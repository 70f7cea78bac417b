// The local server's functions taken from a cloud assembly: each bundle in a process of its own.
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { ADDRESS_BLOCK_OPERATION } from '#functions/address-block/address-block-dependencies.ts'
import type { AddressBlockResult } from '#functions/address-block/address-block-handler.ts'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import { LOCAL_API_STAGE } from '#local/control-plane/control-plane-store.ts'
import type { KeySyncInvoker } from '#local/control-plane/local-key-sync-runner.ts'
import type { AddressBlockInvoker } from '#local/edge/local-address-block.ts'
import type { ProxyHandler, TokenAuthorizer } from '#local/gateway/local-gateway.ts'
import { ROUTES, type Route } from '#shared/config/routes-config.ts'
import { CLIENT_LIMITS_VARIABLE } from '#shared/data/dynamo-client.ts'
import {
  AssemblyError,
  type AssemblyFunction,
  readAssemblyFunctions,
} from './cloud-assembly-functions.ts'
import { LambdaProcess } from './lambda-process.ts'

/** Where the functions come from: the cloud assembly `npm run synth` wrote, and which stage's template. */
export interface BundleSource {
  assemblyDir: string
  stage: string
}

/**
 * Variables of where the code runs, set for every function whatever its template says: the
 * DynamoDB endpoint and credentials, the Region, the client's time limits, logging and metrics
 * kept local (there is no CloudWatch here). Every other local value (a table's name, the cursor
 * secret, the CORS origin, the API's id) replaces only a variable the template gives the function.
 */
export const RUNTIME_VARIABLES = [
  'DYNAMODB_ENDPOINT',
  CLIENT_LIMITS_VARIABLE,
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'POWERTOOLS_METRICS_DISABLED',
  'POWERTOOLS_LOG_LEVEL',
  // The SDK's service-specific endpoint setting: the key sync's management API, locally.
  'AWS_ENDPOINT_URL_API_GATEWAY',
  // Likewise the automatic block's WAF API.
  'AWS_ENDPOINT_URL_WAFV2',
] as const

/**
 * What Lambda itself sets in every execution environment ("Defined runtime environment
 * variables", AWS Lambda Developer Guide), for a function of this machine's local stage.
 */
const lambdaDefinedVariables = (fn: AssemblyFunction, region: string): Record<string, string> => {
  const functionName = `petstore-local-${fn.service}`
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    _HANDLER: fn.handler,
    LAMBDA_TASK_ROOT: fn.codeDir,
    AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: functionName,
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: 'local',
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
  }
}

/**
 * A function's whole environment: Lambda's own variables, the template's (NODE_OPTIONS among
 * them when it sets one), each value CloudFormation would resolve at deploy time taken from the
 * local stage by the variable's name, and where it runs. A variable the local stage cannot
 * resolve stops the start: the bundle would read a value it never gets on AWS either.
 */
export const bundleEnvironment = (
  fn: AssemblyFunction,
  local: Record<string, string>,
): Record<string, string> => {
  const environment = lambdaDefinedVariables(fn, local.AWS_REGION ?? 'us-east-1')
  for (const [name, value] of Object.entries(fn.environment)) {
    const localValue = local[name]
    if (localValue !== undefined) environment[name] = localValue
    else if (typeof value === 'string') environment[name] = value
    else {
      throw new AssemblyError(
        `${fn.logicalId} (${fn.service}) reads ${name}, which CloudFormation resolves at deploy time and the local stage does not define`,
      )
    }
  }
  for (const name of RUNTIME_VARIABLES) {
    const value = local[name]
    if (value) environment[name] = value
  }
  return environment
}

export interface BundleFunctions {
  handlers: Record<Route['operationId'], ProxyHandler>
  authorizer: TokenAuthorizer
  /**
   * The key sync's bundle, reading the local control plane's management API at `endpoint` with
   * the control plane's secret; started when the server knows its address.
   */
  startKeySync(endpoint: string, controlSecret: string): Promise<KeySyncInvoker>
  /**
   * The address-block function's bundle, reading the local WAF's API at `endpoint` with the
   * control plane's secret; `environment` gives what CloudFormation would resolve (its table, its
   * IP sets) and the local stage's edge settings.
   */
  startAddressBlock(
    endpoint: string,
    controlSecret: string,
    environment: Record<string, string>,
  ): Promise<AddressBlockInvoker>
  /** Ends every function's process. */
  stop(): Promise<void>
}

const required = (functions: Map<string, AssemblyFunction>, service: string): AssemblyFunction => {
  const fn = functions.get(service)
  if (!fn) throw new AssemblyError(`the assembly has no function for ${service}`)
  return fn
}

/** The Node.js major version of a Lambda runtime name (nodejs24.x: 24). */
const runtimeMajor = (runtime: string): number => Number(/^nodejs(\d+)\.x$/.exec(runtime)?.[1])

/**
 * Loads every function of the source's stage and runs its init (a cold start each), so a bundle
 * that cannot load stops the start. `local` is the local stage's function environment
 * (local-environment.ts).
 */
export const loadBundleFunctions = async (
  source: BundleSource,
  local: Record<string, string>,
  /** Each function's own DynamoDB endpoint, behind its role (local/deployed-iam/). */
  dynamoEndpointOf?: (service: string) => string,
): Promise<BundleFunctions> => {
  const functions = readAssemblyFunctions(source.assemblyDir, source.stage)
  const hostMajor = Number(process.versions.node.split('.')[0])
  for (const fn of functions.values()) {
    if (runtimeMajor(fn.runtime) !== hostMajor) {
      throw new AssemblyError(
        `${fn.service} runs on ${fn.runtime} and this is Node ${process.versions.node}: run through npm (it pins the Lambda runtime's Node)`,
      )
    }
  }
  // On Lambda the execution role's credentials are variables too: here the operator's (DynamoDB
  // Local or AWS behind DYNAMODB_ENDPOINT), unless the local stage set its own.
  const credentials = Object.fromEntries(
    ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'].flatMap((name) => {
      const value = process.env[name]
      return value ? [[name, value]] : []
    }),
  )
  const processOf = (fn: AssemblyFunction, extra: Record<string, string> = {}) =>
    new LambdaProcess({
      name: fn.service,
      codeDir: fn.codeDir,
      handler: fn.handler,
      environment: bundleEnvironment(fn, {
        ...credentials,
        ...local,
        ...(dynamoEndpointOf ? { DYNAMODB_ENDPOINT: dynamoEndpointOf(fn.service) } : {}),
        ...extra,
      }),
      timeoutSeconds: fn.timeoutSeconds,
    })
  const operations = ROUTES.map(
    (route) => [route.operationId, processOf(required(functions, route.operationId))] as const,
  )
  const authorizer = processOf(required(functions, 'authorizer'))
  const started: LambdaProcess[] = [authorizer, ...operations.map(([, process]) => process)]
  const stop = async () => {
    await Promise.all(started.map((process) => process.stop()))
  }
  try {
    await Promise.all(started.map((process) => process.start()))
  } catch (error) {
    await stop()
    throw error
  }
  return {
    handlers: Object.fromEntries(
      operations.map(([operationId, process]) => [
        operationId,
        ((event, context) => process.invoke(event, context)) satisfies ProxyHandler,
      ]),
    ) as Record<Route['operationId'], ProxyHandler>,
    authorizer: (event, context) => authorizer.invoke<APIGatewayAuthorizerResult>(event, context),
    startKeySync: async (endpoint, controlSecret) => {
      const secretCredentials = controlSecretCredentials(controlSecret)
      const keySync = processOf(required(functions, 'key-sync'), {
        REST_API_ID: LOCAL_API_STAGE.apiId,
        API_STAGE: LOCAL_API_STAGE.stage,
        AWS_ENDPOINT_URL_API_GATEWAY: endpoint,
        AWS_ACCESS_KEY_ID: secretCredentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: secretCredentials.secretAccessKey,
        // The control plane's secret is the whole credential: no session of the operator's.
        AWS_SESSION_TOKEN: '',
      })
      started.push(keySync)
      await keySync.start()
      return (event, context) => keySync.invoke<KeySyncResult>(event, context)
    },
    startAddressBlock: async (endpoint, controlSecret, environment) => {
      const secretCredentials = controlSecretCredentials(controlSecret)
      const addressBlock = processOf(required(functions, ADDRESS_BLOCK_OPERATION), {
        ...environment,
        AWS_ENDPOINT_URL_WAFV2: endpoint,
        AWS_ACCESS_KEY_ID: secretCredentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: secretCredentials.secretAccessKey,
        AWS_SESSION_TOKEN: '',
      })
      started.push(addressBlock)
      await addressBlock.start()
      return (event, context) => addressBlock.invoke<AddressBlockResult>(event, context)
    },
    stop,
  }
}
