import { type CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation'
import { PLAN_DISPLAY_NAMES, PLAN_NAMES, type PlanName } from '#shared/config/plans-config.ts'
import { stackName } from '#shared/config/stack-names-config.ts'

/**
 * What the keys CLI and the smoke test need to know about a stage, by the names of its stack
 * outputs (docs/operations.md, "Stack outputs"): the API stack's BaseUrl, RestApiId, StageName,
 * <Plan>UsagePlanId and KeySyncFunctionName, the data stack's KeyMirrorTableName. The local
 * server serves the same names at /_local/outputs.
 */
export interface StageOutputs {
  baseUrl: string
  restApiId: string
  stageName: string
  planIds: Record<PlanName, string>
  /** Deployed stages only: invoked to run a sync. */
  keySyncFunctionName?: string
  /** Deployed stages only: read to see what the mirror holds. */
  keyMirrorTableName?: string
  /** The rate limiter's table (the data stack's RateLimitTableName): usage, suspensions. */
  rateLimitTableName?: string
  /** The largest per-minute limit a plan may have (the API stack's LargestPlanPerMinute). */
  largestPlanPerMinute?: number
  /** The store key table (the data stack's StoreKeyTableName): keys beyond API Gateway's. */
  storeKeyTableName?: string
  /** The current key MAC secret and its version (the data stack's KeyMacSecretArn, KeyMacVersion). */
  keyMacSecretArn?: string
  keyMacVersion?: number
}

const regionOf = async (client: CloudFormationClient): Promise<string | undefined> => {
  try {
    return await client.config.region()
  } catch {
    return undefined
  }
}

const configurationError = async (
  client: CloudFormationClient,
  name: string,
  error: unknown,
): Promise<Error> => {
  const { name: type = 'Error', message = '' } = (error ?? {}) as {
    name?: string
    message?: string
  }
  const region = await regionOf(client)
  if (region === undefined || /region is missing/i.test(message)) {
    return new Error(
      `No AWS Region is set: pass --region, or set AWS_REGION (or a profile's region)`,
    )
  }
  if (type === 'ValidationError' && /does not exist/.test(message)) {
    return new Error(
      `Stack ${name} does not exist in Region ${region} of this account: deploy the stage, or pass the Region it is in (--region or AWS_REGION)`,
    )
  }
  if (type === 'AccessDenied' || type === 'AccessDeniedException') {
    return new Error(
      `Your role may not read stack ${name} (${type}: ${message}): add cloudformation:DescribeStacks on it to your role`,
    )
  }
  if (type === 'CredentialsProviderError' || /ExpiredToken|InvalidClientTokenId/.test(type)) {
    return new Error(
      `No valid AWS credentials (${type}): set AWS_PROFILE, or sign in again (aws sso login)`,
    )
  }
  return new Error(`Reading stack ${name} in Region ${region} failed (${type}: ${message})`)
}

/** The outputs a stage must have, named in the error when one is missing. */
export const stageOutputsFrom = (outputs: Record<string, string>, where: string): StageOutputs => {
  const required = (name: string): string => {
    const value = outputs[name]
    if (!value) throw new Error(`${where} has no output ${name}: deploy the stage first`)
    return value
  }
  const planIds = Object.fromEntries(
    PLAN_NAMES.map((plan) => [plan, required(`${PLAN_DISPLAY_NAMES[plan]}UsagePlanId`)]),
  ) as Record<PlanName, string>
  return {
    baseUrl: required('BaseUrl'),
    restApiId: required('RestApiId'),
    stageName: required('StageName'),
    planIds,
    ...(outputs.KeySyncFunctionName ? { keySyncFunctionName: outputs.KeySyncFunctionName } : {}),
    ...(outputs.KeyMirrorTableName ? { keyMirrorTableName: outputs.KeyMirrorTableName } : {}),
    ...(outputs.RateLimitTableName ? { rateLimitTableName: outputs.RateLimitTableName } : {}),
    ...(/^[1-9]\d*$/.test(outputs.LargestPlanPerMinute ?? '')
      ? { largestPlanPerMinute: Number(outputs.LargestPlanPerMinute) }
      : {}),
  }
}

/**
 * A stack's outputs. What cannot pass on a retry ends the command with the setting to fix: a stack
 * missing from the Region (the wrong Region, or no deploy), a role without DescribeStacks,
 * credentials that are missing or expired.
 */
const outputsOf = async (client: CloudFormationClient, name: string) => {
  const answer = await client
    .send(new DescribeStacksCommand({ StackName: name }))
    .catch(async (error: unknown) => {
      throw await configurationError(client, name, error)
    })
  const { Stacks = [] } = answer
  const stack = Stacks[0]
  if (!stack) throw new Error(`No stack ${name} in this account and Region`)
  return Object.fromEntries(
    (stack.Outputs ?? []).flatMap((output) =>
      output.OutputKey && output.OutputValue ? [[output.OutputKey, output.OutputValue]] : [],
    ),
  ) as Record<string, string>
}

/** A deployed stage's outputs: two DescribeStacks calls (API and data stack). */
export const readStackOutputs = async (
  client: CloudFormationClient,
  stage: string,
): Promise<StageOutputs> => {
  const api = stackName(stage, 'api')
  const data = stackName(stage, 'data')
  const [apiOutputs, dataOutputs] = await Promise.all([
    outputsOf(client, api),
    outputsOf(client, data),
  ])
  const outputs = stageOutputsFrom(apiOutputs, `Stack ${api}`)
  if (!outputs.keySyncFunctionName) {
    throw new Error(`Stack ${api} has no output KeySyncFunctionName: deploy the stage first`)
  }
  const keyMirrorTableName = dataOutputs.KeyMirrorTableName
  if (!keyMirrorTableName) {
    throw new Error(`Stack ${data} has no output KeyMirrorTableName: deploy the stage first`)
  }
  return {
    ...outputs,
    keyMirrorTableName,
    ...(dataOutputs.RateLimitTableName
      ? { rateLimitTableName: dataOutputs.RateLimitTableName }
      : {}),
    ...(dataOutputs.StoreKeyTableName ? { storeKeyTableName: dataOutputs.StoreKeyTableName } : {}),
    ...(dataOutputs.KeyMacSecretArn ? { keyMacSecretArn: dataOutputs.KeyMacSecretArn } : {}),
    ...(/^[1-9]\d?$/.test(dataOutputs.KeyMacVersion ?? '')
      ? { keyMacVersion: Number(dataOutputs.KeyMacVersion) }
      : {}),
  }
}
