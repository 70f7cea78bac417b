import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  APIGatewayClient,
  CreateDeploymentCommand,
  CreateRestApiCommand,
  CreateUsagePlanCommand,
  GetResourcesCommand,
  PutIntegrationCommand,
  PutMethodCommand,
} from '@aws-sdk/client-api-gateway'
import {
  CloudFormationClient,
  CreateStackCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation'
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager'
import { stackName } from '#shared/config/stack-names-config.ts'

/**
 * A deployed stage as far as moto (an AWS emulator this project did not write) can hold one:
 * the data stack created by moto's CloudFormation from the synthesized template; the API stack's
 * management-API resources (REST API, stage, usage plans) made with SDK calls read from the
 * synthesized API template, since moto's CloudFormation cannot create that stack (no
 * AWS::ApiGateway::Stage, and it fails on AWS::Lambda::Version); the data stack's secrets (the key
 * MAC secret) made through moto's Secrets Manager, since its CloudFormation skips
 * AWS::SecretsManager::Secret and drops the outputs that name one; and a stack carrying the API
 * stack's outputs, resolved against what was made, so the tools find the stage as they find a
 * deployed one (ops/stage/stack-outputs-reader.ts).
 */

/** moto's endpoint, from .ci/moto.sh. */
export const motoEndpoint = (): string => {
  const endpoint = process.env.AWS_ENDPOINT_URL
  if (!endpoint) throw new Error('AWS_ENDPOINT_URL must point at moto_server (.ci/moto.sh)')
  return endpoint
}

/** The cloud assembly `cdk synth` wrote (.ci/moto.sh synthesizes into it). */
const assemblyDir = (): string => {
  const dir = process.env.PETSTORE_MOTO_ASSEMBLY
  if (!dir) throw new Error('PETSTORE_MOTO_ASSEMBLY must name a cdk synth output directory')
  return dir
}

type Json = Record<string, unknown>

interface Template {
  Resources: Record<string, { Type: string; Properties?: Json }>
  Outputs?: Record<string, { Value: unknown }>
}

export const readTemplate = (name: string): Template =>
  JSON.parse(readFileSync(join(assemblyDir(), `${name}.template.json`), 'utf8')) as Template

const region = (): string => process.env.AWS_REGION ?? 'us-east-1'

/**
 * CloudFormation's `Ref`, pseudo parameters and `Fn::Join`, as far as the outputs use them;
 * a `Ref` to a resource that was not made resolves to a name as CloudFormation would make one.
 */
const resolve = (value: unknown, physical: Map<string, string>, stack: string): unknown => {
  if (typeof value !== 'object' || value === null) return value
  const ref = (value as { Ref?: string }).Ref
  if (ref !== undefined) {
    if (ref === 'AWS::Region') return region()
    if (ref === 'AWS::URLSuffix') return 'amazonaws.com'
    return physical.get(ref) ?? `${stack}-${ref}`
  }
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
  if (join) return join[1].map((part) => resolve(part, physical, stack)).join(join[0])
  throw new Error(`Cannot resolve ${JSON.stringify(value)}`)
}

const tagMap = (tags: unknown): Record<string, string> =>
  Object.fromEntries(
    ((tags as { Key: string; Value: string }[] | undefined) ?? []).map(({ Key, Value }) => [
      Key,
      Value,
    ]),
  )

/** What `cdk bootstrap` leaves in an account: the version the templates' rule checks. */
const putBootstrapVersion = async (): Promise<void> => {
  // moto's SSM over its JSON protocol (no SSM client is a dependency of this project).
  const response = await fetch(motoEndpoint(), {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.1',
      'X-Amz-Target': 'AmazonSSM.PutParameter',
      Authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/${region()}/ssm/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify({
      Name: '/cdk-bootstrap/hnb659fds/version',
      Value: '30',
      Type: 'String',
      Overwrite: true,
    }),
  })
  if (response.status !== 200) throw new Error(`SSM PutParameter: ${response.status}`)
}

const outputsOf = async (cloudFormation: CloudFormationClient, name: string) => {
  const { Stacks = [] } = await cloudFormation.send(new DescribeStacksCommand({ StackName: name }))
  const [stack] = Stacks
  if (stack?.StackStatus !== 'CREATE_COMPLETE') {
    throw new Error(`${name}: ${stack?.StackStatus} ${stack?.StackStatusReason ?? ''}`)
  }
  return Object.fromEntries(
    (stack.Outputs ?? []).map((output) => [output.OutputKey ?? '', output.OutputValue ?? '']),
  )
}

export interface MotoStage {
  stage: string
  restApiId: string
  /** Usage plan ids by the plan's logical id in the API template. */
  planIds: Map<string, string>
  /** The data stack's outputs, as moto's CloudFormation reports them. */
  dataOutputs: Record<string, string>
  /** The API stack's outputs, resolved against what was made. */
  apiOutputs: Record<string, string>
}

/**
 * The template with each AWS::SecretsManager::Secret made beforehand through moto's Secrets
 * Manager (a generated value, as `GenerateSecretString` asks) and taken out, and every output
 * naming it (`Ref`: its ARN) given that ARN: moto's CloudFormation creates no such resource and
 * leaves those outputs out (the keys CLI reads the key MAC secret through one).
 */
const withSecretsMade = async (template: Template): Promise<Template> => {
  const secrets = new SecretsManagerClient({})
  const resources = { ...template.Resources }
  const arns = new Map<string, string>()
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::SecretsManager::Secret') continue
    const { ARN } = await secrets.send(
      new CreateSecretCommand({
        Name: `${logicalId}-${randomBytes(4).toString('hex')}`,
        SecretString: randomBytes(48).toString('base64url').slice(0, 64),
      }),
    )
    arns.set(logicalId, ARN as string)
    delete resources[logicalId]
  }
  const outputs = Object.fromEntries(
    Object.entries(template.Outputs ?? {}).map(([name, output]) => {
      const ref = (output.Value as { Ref?: string } | undefined)?.Ref
      const arn = ref === undefined ? undefined : arns.get(ref)
      return [name, arn === undefined ? output : { ...output, Value: arn }]
    }),
  )
  return { ...template, Resources: resources, Outputs: outputs }
}

/** A REST API with one deployed stage (a deployment needs a method with an integration). */
export const createRestApi = async (
  client: APIGatewayClient,
  name: string,
  stage: string,
): Promise<string> => {
  const { id: restApiId } = await client.send(new CreateRestApiCommand({ name }))
  const { items = [] } = await client.send(new GetResourcesCommand({ restApiId }))
  const resourceId = items.find((item) => item.path === '/')?.id
  const method = { restApiId, resourceId, httpMethod: 'GET' }
  await client.send(new PutMethodCommand({ ...method, authorizationType: 'NONE' }))
  await client.send(new PutIntegrationCommand({ ...method, type: 'MOCK' }))
  await client.send(new CreateDeploymentCommand({ restApiId, stageName: stage }))
  return restApiId as string
}

/** Builds `stage` in moto as described above; the clients are the caller's, on moto. */
export const deployStageToMoto = async (
  stage: string,
  {
    apiGateway,
    cloudFormation,
  }: { apiGateway: APIGatewayClient; cloudFormation: CloudFormationClient },
): Promise<MotoStage> => {
  await putBootstrapVersion()
  const dataStack = stackName(stage, 'data')
  await cloudFormation.send(
    new CreateStackCommand({
      StackName: dataStack,
      TemplateBody: JSON.stringify(await withSecretsMade(readTemplate(dataStack))),
    }),
  )
  const dataOutputs = await outputsOf(cloudFormation, dataStack)

  const apiStack = stackName(stage, 'api')
  const template = readTemplate(apiStack)
  const ofType = (type: string) =>
    Object.entries(template.Resources).filter(([, resource]) => resource.Type === type)
  const [[apiLogicalId, restApi] = []] = ofType('AWS::ApiGateway::RestApi')
  const [[stageLogicalId, stageResource] = []] = ofType('AWS::ApiGateway::Stage')
  if (!apiLogicalId || !restApi || !stageLogicalId || !stageResource) {
    throw new Error(`${apiStack} has no REST API and stage`)
  }
  const stageName = stageResource.Properties?.StageName as string
  const restApiId = await createRestApi(apiGateway, restApi.Properties?.Name as string, stageName)
  const physical = new Map([
    [apiLogicalId, restApiId],
    [stageLogicalId, stageName],
  ])

  const planIds = new Map<string, string>()
  for (const [logicalId, { Properties = {} }] of ofType('AWS::ApiGateway::UsagePlan')) {
    const apiStages = (Properties.ApiStages as Json[]).map((entry) => ({
      apiId: resolve(entry.ApiId, physical, apiStack) as string,
      stage: resolve(entry.Stage, physical, apiStack) as string,
    }))
    // The pool plan of store keys has neither.
    const throttle = Properties.Throttle as { BurstLimit: number; RateLimit: number } | undefined
    const quota = Properties.Quota as
      | { Limit: number; Period: 'DAY' | 'WEEK' | 'MONTH' }
      | undefined
    const { id } = await apiGateway.send(
      new CreateUsagePlanCommand({
        name: Properties.UsagePlanName as string,
        description: Properties.Description as string,
        apiStages,
        ...(throttle
          ? { throttle: { burstLimit: throttle.BurstLimit, rateLimit: throttle.RateLimit } }
          : {}),
        ...(quota ? { quota: { limit: quota.Limit, period: quota.Period } } : {}),
        tags: tagMap(Properties.Tags),
      }),
    )
    planIds.set(logicalId, id as string)
    physical.set(logicalId, id as string)
  }

  const apiOutputs = Object.fromEntries(
    Object.entries(template.Outputs ?? {}).map(([name, { Value }]) => [
      name,
      String(resolve(Value, physical, apiStack)),
    ]),
  )
  // A stack that holds nothing but the API stack's outputs, where the tools look for them.
  await cloudFormation.send(
    new CreateStackCommand({
      StackName: apiStack,
      TemplateBody: JSON.stringify({
        Resources: { Outputs: { Type: 'AWS::CloudFormation::WaitConditionHandle' } },
        Outputs: Object.fromEntries(
          Object.entries(apiOutputs).map(([name, value]) => [name, { Value: value }]),
        ),
      }),
    }),
  )
  return {
    stage,
    restApiId,
    planIds,
    dataOutputs,
    apiOutputs: await outputsOf(cloudFormation, apiStack),
  }
}

/** SDK clients on moto, with the dummy credentials .ci/moto.sh exports. */
export const motoClients = () => ({
  apiGateway: new APIGatewayClient({ endpoint: motoEndpoint(), maxAttempts: 1 }),
  cloudFormation: new CloudFormationClient({ endpoint: motoEndpoint(), maxAttempts: 1 }),
})

export { tagMap }
