import type { Template } from 'aws-cdk-lib/assertions'
import type { PolicyDocument } from '#local/iam/iam-policy-evaluator.ts'
import type { CfnResource } from './synth-app.ts'

/**
 * A stage's synthesized templates with their tokens resolved as CloudFormation would resolve them
 * in an account: pseudo parameters from the scope, `Ref` and `Fn::GetAtt` to the name and ARN the
 * resource gets (CloudFormation names a resource `<stack>-<logical id>-<suffix>` unless the
 * template names it; API Gateway ids are made up), `Fn::ImportValue` from the other stack's
 * exports. Enough for IAM policies and resource ARNs; anything else fails loudly.
 */
export interface DeployScope {
  partition: string
  region: string
  account: string
  stage: string
}

export interface DeployedResource {
  stack: string
  logicalId: string
  type: string
  properties: Record<string, unknown>
  /** What `Ref` returns. */
  ref: string
  /** The ARN IAM authorizes management calls on. */
  arn: string
}

const SUFFIX = 'EXAMPLE1A2B3C'
// The logical id's hash suffix: one id per resource, as API Gateway's are.
const apiId = (logicalId: string) => `id${logicalId.toLowerCase().slice(-8)}`

/** The name CloudFormation gives a resource the template does not name. */
const generatedName = (stack: string, logicalId: string, max = 64) =>
  `${stack}-${logicalId}`.slice(0, max - SUFFIX.length - 1).concat(`-${SUFFIX}`)

const literal = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : undefined

interface Named {
  ref: string
  arn: string
}

/** Ref and ARN per resource type, as the service's documentation gives its ARNs. */
const naming = (
  s: DeployScope,
  stack: string,
  logicalId: string,
  type: string,
  properties: Record<string, unknown>,
  resolve: (value: unknown) => unknown,
): Named => {
  const arn = (service: string, resource: string, region = s.region) =>
    `arn:${s.partition}:${service}:${region}:${s.account}:${resource}`
  const apigateway = (path: string) => `arn:${s.partition}:apigateway:${s.region}::${path}`
  const named = (key: string, max?: number) =>
    literal(resolve(properties[key])) ?? generatedName(stack, logicalId, max)
  const restApi = () => literal(resolve(properties.RestApiId)) ?? 'unknown'
  switch (type) {
    case 'AWS::DynamoDB::Table': {
      const name = named('TableName', 255)
      return { ref: name, arn: arn('dynamodb', `table/${name}`) }
    }
    case 'AWS::IAM::Role': {
      const name = named('RoleName')
      const path = literal(properties.Path) ?? '/'
      return { ref: name, arn: `arn:${s.partition}:iam::${s.account}:role${path}${name}` }
    }
    case 'AWS::IAM::Policy':
      return { ref: named('PolicyName'), arn: '' }
    case 'AWS::IAM::ManagedPolicy': {
      const policy = `arn:${s.partition}:iam::${s.account}:policy/${named('ManagedPolicyName', 128)}`
      return { ref: policy, arn: policy }
    }
    case 'AWS::IAM::OIDCProvider': {
      const url = (literal(properties.Url) ?? '').replace('https://', '')
      const provider = `arn:${s.partition}:iam::${s.account}:oidc-provider/${url}`
      return { ref: provider, arn: provider }
    }
    case 'AWS::Lambda::Function': {
      const name = named('FunctionName')
      return { ref: name, arn: arn('lambda', `function:${name}`) }
    }
    case 'AWS::Lambda::Version':
    case 'AWS::Lambda::Alias':
    case 'AWS::Lambda::EventInvokeConfig':
    case 'AWS::Lambda::Permission': {
      const fn = literal(resolve(properties.FunctionName)) ?? 'unknown'
      const name = fn.startsWith('arn:') ? fn.split(':').slice(6).join(':') : fn
      const qualifier =
        type === 'AWS::Lambda::Alias'
          ? `:${properties.Name}`
          : type === 'AWS::Lambda::Version'
            ? ':1'
            : ''
      const qualified = arn('lambda', `function:${name.split(':')[0]}${qualifier}`)
      return { ref: qualified, arn: qualified }
    }
    case 'AWS::Logs::LogGroup': {
      const name = named('LogGroupName', 512)
      return { ref: name, arn: arn('logs', `log-group:${name}:*`) }
    }
    case 'AWS::Logs::SubscriptionFilter': {
      // A filter is named within its log group, whose ARN IAM authorizes its actions on.
      const group = literal(resolve(properties.LogGroupName)) ?? 'unknown'
      return { ref: named('FilterName', 512), arn: arn('logs', `log-group:${group}:*`) }
    }
    case 'AWS::SNS::Topic': {
      const topic = arn('sns', named('TopicName', 256))
      return { ref: topic, arn: topic }
    }
    case 'AWS::SNS::Subscription': {
      const topic = literal(resolve(properties.TopicArn)) ?? 'unknown'
      return { ref: `${topic}:0a1b2c3d`, arn: `${topic}:0a1b2c3d` }
    }
    case 'AWS::SNS::TopicPolicy': {
      const [topic] = (resolve(properties.Topics) as string[] | undefined) ?? ['unknown']
      return { ref: logicalId, arn: topic as string }
    }
    case 'AWS::CloudWatch::Alarm': {
      const name = named('AlarmName', 255)
      return { ref: name, arn: arn('cloudwatch', `alarm:${name}`) }
    }
    case 'AWS::CloudWatch::Dashboard': {
      const name = named('DashboardName', 255)
      return { ref: name, arn: `arn:${s.partition}:cloudwatch::${s.account}:dashboard/${name}` }
    }
    case 'AWS::CloudWatch::InsightRule': {
      const name = named('RuleName', 128)
      return { ref: name, arn: arn('cloudwatch', `insight-rule/${name}`) }
    }
    case 'AWS::CodeDeploy::Application': {
      const name = named('ApplicationName', 100)
      return { ref: name, arn: arn('codedeploy', `application:${name}`) }
    }
    case 'AWS::CodeDeploy::DeploymentGroup': {
      const app = literal(resolve(properties.ApplicationName)) ?? 'unknown'
      const name = named('DeploymentGroupName', 100)
      return { ref: name, arn: arn('codedeploy', `deploymentgroup:${app}/${name}`) }
    }
    case 'AWS::Events::Rule': {
      const name = named('Name', 64)
      return { ref: name, arn: arn('events', `rule/${name}`) }
    }
    case 'AWS::SecretsManager::Secret': {
      // CloudFormation names a secret after its logical id (no stack name).
      const name = literal(resolve(properties.Name)) ?? `${logicalId}-${SUFFIX}`
      const secret = arn('secretsmanager', `secret:${name}-AbCdEf`)
      return { ref: secret, arn: secret }
    }
    case 'AWS::WAFv2::IPSet':
    case 'AWS::WAFv2::WebACL': {
      const kind = type === 'AWS::WAFv2::IPSet' ? 'ipset' : 'webacl'
      const name = named('Name', 128)
      const wafArn = arn('wafv2', `regional/${kind}/${name}/0a1b2c3d-${logicalId.length}`)
      return { ref: `${name}|0a1b2c3d|REGIONAL`, arn: wafArn }
    }
    case 'AWS::WAFv2::WebACLAssociation':
      return { ref: logicalId, arn: literal(resolve(properties.WebACLArn)) ?? 'unknown' }
    case 'AWS::ApiGateway::RestApi':
      return { ref: apiId(logicalId), arn: apigateway(`/restapis/${apiId(logicalId)}`) }
    case 'AWS::ApiGateway::Stage': {
      const name = literal(resolve(properties.StageName)) ?? 'stage'
      return { ref: name, arn: apigateway(`/restapis/${restApi()}/stages/${name}`) }
    }
    case 'AWS::ApiGateway::Resource':
      return {
        ref: apiId(logicalId),
        arn: apigateway(`/restapis/${restApi()}/resources/${apiId(logicalId)}`),
      }
    case 'AWS::ApiGateway::Method':
      return { ref: logicalId, arn: apigateway(`/restapis/${restApi()}/resources/x/methods/GET`) }
    case 'AWS::ApiGateway::Authorizer':
      return {
        ref: apiId(logicalId),
        arn: apigateway(`/restapis/${restApi()}/authorizers/${apiId(logicalId)}`),
      }
    case 'AWS::ApiGateway::Deployment':
      return {
        ref: apiId(logicalId),
        arn: apigateway(`/restapis/${restApi()}/deployments/${apiId(logicalId)}`),
      }
    case 'AWS::ApiGateway::GatewayResponse':
      return {
        ref: logicalId,
        arn: apigateway(`/restapis/${restApi()}/gatewayresponses/DEFAULT_4XX`),
      }
    case 'AWS::ApiGateway::UsagePlan':
      return { ref: apiId(logicalId), arn: apigateway(`/usageplans/${apiId(logicalId)}`) }
    case 'AWS::ApiGateway::ApiKey':
      return { ref: apiId(logicalId), arn: apigateway(`/apikeys/${apiId(logicalId)}`) }
    case 'AWS::ApiGateway::UsagePlanKey': {
      const plan = literal(resolve(properties.UsagePlanId)) ?? 'unknown'
      const key = literal(resolve(properties.KeyId)) ?? 'unknown'
      return { ref: key, arn: apigateway(`/usageplans/${plan}/keys/${key}`) }
    }
    case 'AWS::ApiGateway::Account':
      return { ref: logicalId, arn: apigateway('/account') }
    case 'AWS::ApiGateway::DomainName': {
      const name = literal(resolve(properties.DomainName)) ?? 'unknown'
      return { ref: name, arn: apigateway(`/domainnames/${name}`) }
    }
    case 'AWS::ApiGateway::BasePathMapping': {
      const domain = literal(resolve(properties.DomainName)) ?? 'unknown'
      return { ref: logicalId, arn: apigateway(`/domainnames/${domain}/basepathmappings/v1`) }
    }
    case 'AWS::Route53::RecordSet': {
      const zone = literal(resolve(properties.HostedZoneId)) ?? 'unknown'
      return { ref: logicalId, arn: `arn:${s.partition}:route53:::hostedzone/${zone}` }
    }
    default:
      if (type.startsWith('Custom::')) {
        // CloudFormation invokes the custom resource's function (its ServiceToken).
        return { ref: logicalId, arn: literal(resolve(properties.ServiceToken)) ?? 'unknown' }
      }
      throw new Error(`deployed-names.ts: no name rule for ${type} (${stack}/${logicalId})`)
  }
}

export interface DeployedStage {
  resources: DeployedResource[]
  /** A template value with every token resolved. */
  resolve(stack: string, value: unknown): unknown
}

/** The stage's stacks as deployed in `scope`: each resource's name and ARN, tokens resolvable. */
export const deployedStage = (
  scope: DeployScope,
  templates: Record<string, Template>,
): DeployedStage => {
  const bodies = Object.fromEntries(
    Object.entries(templates).map(([stack, template]) => [
      stack,
      template.toJSON() as {
        Resources: Record<string, CfnResource>
        Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>
      },
    ]),
  )
  const named = new Map<string, Named>()
  const exports = new Map<string, unknown>()
  for (const [stack, body] of Object.entries(bodies)) {
    for (const output of Object.values(body.Outputs ?? {})) {
      const name = output.Export?.Name
      if (typeof name === 'string') exports.set(name, { stack, value: output.Value })
    }
  }
  const pseudo: Record<string, string> = {
    'AWS::Partition': scope.partition,
    'AWS::Region': scope.region,
    'AWS::AccountId': scope.account,
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::NoValue': '',
  }
  const nameOf = (stack: string, logicalId: string): Named => {
    const key = `${stack}/${logicalId}`
    const known = named.get(key)
    if (known) return known
    const resource = bodies[stack]?.Resources[logicalId]
    if (!resource) throw new Error(`deployed-names.ts: ${key} is not in the templates`)
    const result = naming(scope, stack, logicalId, resource.Type, resource.Properties ?? {}, (v) =>
      resolve(stack, v),
    )
    named.set(key, result)
    return result
  }
  const resolve = (stack: string, value: unknown): unknown => {
    if (Array.isArray(value)) return value.map((item) => resolve(stack, item))
    if (value === null || typeof value !== 'object') return value
    const object = value as Record<string, unknown>
    const [key] = Object.keys(object)
    if (Object.keys(object).length === 1 && key !== undefined) {
      const argument = object[key]
      if (key === 'Ref') {
        const name = argument as string
        return pseudo[name] ?? nameOf(stack, name).ref
      }
      if (key === 'Fn::GetAtt') {
        const [logicalId, attribute] = argument as [string, string]
        if (attribute === 'Arn') return nameOf(stack, logicalId).arn
        return nameOf(stack, logicalId).ref
      }
      if (key === 'Fn::Join') {
        const [separator, parts] = argument as [string, unknown[]]
        return parts.map((part) => String(resolve(stack, part))).join(separator)
      }
      if (key === 'Fn::ImportValue') {
        const found = exports.get(argument as string) as
          | { stack: string; value: unknown }
          | undefined
        if (!found) throw new Error(`deployed-names.ts: no export ${String(argument)}`)
        return resolve(found.stack, found.value)
      }
      if (key === 'Fn::Sub' && typeof argument === 'string') {
        return argument.replace(/\$\{([^}]+)\}/g, (_m, name: string) =>
          String(
            resolve(stack, name.includes('.') ? { 'Fn::GetAtt': name.split('.') } : { Ref: name }),
          ),
        )
      }
    }
    return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolve(stack, v)]))
  }
  const resources = Object.entries(bodies).flatMap(([stack, body]) =>
    Object.entries(body.Resources)
      .filter(([, resource]) => resource.Type !== 'AWS::CDK::Metadata')
      .map(([logicalId, resource]) => ({
        stack,
        logicalId,
        type: resource.Type,
        properties: resource.Properties ?? {},
        ...nameOf(stack, logicalId),
      })),
  )
  return { resources, resolve }
}

/** A resolved policy document (the evaluator's input). */
export const asPolicy = (document: unknown): PolicyDocument => document as PolicyDocument
