import { Aws, Duration, Validations } from 'aws-cdk-lib'
import { TokenAuthorizer } from 'aws-cdk-lib/aws-apigateway'
import { PolicyStatement } from 'aws-cdk-lib/aws-iam'
import type { Construct } from 'constructs'
import { AUTHORIZER_ENTRY } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { formatPlanLimits } from '#shared/config/plans-config.ts'
import { AUTHORIZER_OPERATION } from '#shared/observability/metrics.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

/**
 * The only API Gateway control-plane reads the authorizer's key store makes: GetApiKeys
 * (GET /apikeys), GetUsagePlans (GET /usageplans) and GetUsagePlanKeys
 * (GET /usageplans/{id}/keys). Plan ids are not known before deployment, hence the one wildcard.
 */
export const KEY_STORE_READ_PATHS = ['/apikeys', '/usageplans', '/usageplans/*/keys'] as const

/**
 * The authorizer function (id `Authorizer`, in `scope` itself: see PetstoreApi), allowed to read
 * API keys and usage plans and nothing else.
 */
export const addApiKeyAuthorizerFunction = (
  scope: Construct,
  config: StageConfig,
): PetstoreFunction => {
  const { stage } = config
  const fn = new PetstoreFunction(scope, 'Authorizer', {
    ...stageFunctionDefaults(config),
    entry: AUTHORIZER_ENTRY,
    serviceName: AUTHORIZER_OPERATION,
    description: `Petstore ${stage}: API key authorizer`,
    logGroupName: `/petstore/${stage}/authorizer`,
    // Small and quick: it hashes a header and looks it up in a cached key snapshot.
    memorySize: 256,
    timeout: Duration.seconds(5),
    environment: { ENTERPRISE_LIMITS: formatPlanLimits(config.enterpriseLimits) },
  })
  // The authorizer takes the REST API id and stage from the methodArn, so it needs no API id.
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['apigateway:GET'],
      resources: KEY_STORE_READ_PATHS.map(
        (path) => `arn:${Aws.PARTITION}:apigateway:${Aws.REGION}::${path}`,
      ),
    }),
  )
  Validations.of(fn).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/usageplans/*/keys]`,
    reason:
      'GetUsagePlanKeys is read for every usage plan of the stage, including plans created in the console after deployment, so plan ids cannot be listed in advance. Only apigateway:GET is allowed.',
  })
  return fn
}

/** The TOKEN authorizer (id `ApiKeyAuthorizer`, in `scope` itself) that calls the function. */
export const addApiKeyAuthorizer = (
  scope: Construct,
  config: StageConfig,
  fn: PetstoreFunction,
): TokenAuthorizer =>
  new TokenAuthorizer(scope, 'ApiKeyAuthorizer', {
    authorizerName: `petstore-${config.stage}-api-key`,
    handler: fn.function,
    identitySource: 'method.request.header.Authorization',
    // The cache key is the Authorization header; the policy covers the whole stage, so one
    // decision serves every route. 0 turns caching off.
    resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
  })
