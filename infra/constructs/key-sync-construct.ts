import { Aws, CustomResource, Duration, Stack, Validations } from 'aws-cdk-lib'
import type { RestApi, UsagePlan } from 'aws-cdk-lib/aws-apigateway'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import { Rule, Schedule } from 'aws-cdk-lib/aws-events'
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets'
import { PolicyStatement } from 'aws-cdk-lib/aws-iam'
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda'
import type { Construct } from 'constructs'
import { KEY_SYNC_ENTRY } from '#functions/function-entries.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { KEY_CHANGE_EVENT_NAMES } from '#keys/key-change-events-config.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { KEY_MIRROR_TABLE } from '#shared/data/table-keys.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'

// The key sync's function, its rules and the management reads it alone may make.

/**
 * The only API Gateway management reads of the stage, all by the key sync: GetUsagePlans
 * (GET /usageplans, tags included, also filtered by keyId), GetUsagePlanKeys
 * (GET /usageplans/{id}/keys), GetApiKeys (GET /apikeys) and GetApiKey (GET /apikeys/{id}, for a
 * key a plan lists that the key listing lacks). Plan and key ids are not known before
 * deployment, hence the wildcards.
 */
const KEY_SYNC_READ_PATHS = ['/usageplans', '/usageplans/*/keys', '/apikeys', '/apikeys/*'] as const

/** A minute: the shortest rate an EventBridge schedule allows ("Schedule expressions", AWS docs). */
const SYNC_INTERVAL = Duration.minutes(1)

/** What the key sync reads and writes: the stage's API and plans, and the mirror. */
export interface KeySyncSubjects {
  api: RestApi
  keyMirrorTable: ITable
  usagePlans: readonly UsagePlan[]
}

/**
 * The key-sync function (id `KeySync`, in `scope` itself: see PetstoreApi) that rebuilds the
 * stage's key mirror from API Gateway: once during every deploy that changes it (custom resource
 * `KeySyncOnDeploy`, so the mirror is never empty after a first deploy), every minute and on key
 * and plan changes (rules `KeySyncSchedule` and `KeySyncOnKeyChange`). It alone may read the
 * management API, and flush the stage's authorizer cache after a run that changed the mirror.
 */
export const addKeySync = (
  scope: Construct,
  config: StageConfig,
  { api, keyMirrorTable, usagePlans }: KeySyncSubjects,
): PetstoreFunction => {
  const { stage } = config
  const stageName = api.deploymentStage.stageName
  const fn = new PetstoreFunction(scope, 'KeySync', {
    ...stageFunctionDefaults(config),
    entry: KEY_SYNC_ENTRY,
    serviceName: KEY_SYNC_OPERATION,
    description: `Petstore ${stage}: key mirror sync from API Gateway`,
    logGroupName: `/petstore/${stage}/key-sync`,
    // As long as the schedule's interval: a hung run ends before a second scheduled one queues.
    // No reserved concurrency (a new account has none to spare): runs take a lease instead.
    timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS.keySync),
    environment: { REST_API_ID: api.restApiId, API_STAGE: stageName },
  }).bindTable(keyMirrorTable, 'REBUILD', { envVar: 'KEY_MIRROR_TABLE_NAME' })
  // The next scheduled run is the retry: a failed run is not repeated, and an event that waited
  // longer than a minute is dropped, the schedule having covered it. 60 s is the shortest maximum
  // event age Lambda allows.
  fn.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: SYNC_INTERVAL })

  // Its lease and guard state: single-item reads and writes of its own item, never of a key's.
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      resources: [keyMirrorTable.tableArn],
      conditions: {
        'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [KEY_MIRROR_TABLE.syncStateKey] },
      },
    }),
  )
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['apigateway:GET'],
      resources: KEY_SYNC_READ_PATHS.map(
        (path) => `arn:${Aws.PARTITION}:apigateway:${Aws.REGION}::${path}`,
      ),
    }),
  )
  // FlushStageAuthorizersCache of this stage, nothing else.
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['apigateway:DELETE'],
      resources: [
        `arn:${Aws.PARTITION}:apigateway:${Aws.REGION}::/restapis/${api.restApiId}/stages/${stageName}/cache/authorizers`,
      ],
    }),
  )
  Validations.of(fn).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/usageplans/*/keys]`,
    reason:
      'GetUsagePlanKeys is read for every usage plan of the stage, including plans created in the console after deployment, so plan ids cannot be listed in advance. Only apigateway:GET is allowed.',
  })
  Validations.of(fn).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/apikeys/*]`,
    reason:
      'GetApiKey confirms a key a usage plan lists but the key listing lacks (created or deleted between the two reads); key ids are made in the console after deployment. Only apigateway:GET is allowed.',
  })

  const target = new LambdaFunction(fn.function)
  new Rule(scope, 'KeySyncSchedule', {
    description: `Petstore ${stage}: rebuild the key mirror every minute`,
    schedule: Schedule.rate(SYNC_INTERVAL),
    targets: [target],
  })
  new Rule(scope, 'KeySyncOnKeyChange', {
    description: `Petstore ${stage}: rebuild the key mirror when API keys or usage plans change`,
    eventPattern: {
      source: ['aws.apigateway'],
      detailType: ['AWS API Call via CloudTrail'],
      detail: { eventSource: ['apigateway.amazonaws.com'], eventName: KEY_CHANGE_EVENT_NAMES },
    },
    targets: [target],
  })

  // CloudFormation invokes the function itself and waits for its answer (functions/key-sync/
  // cloudformation-response.ts): no provider function, no log group without retention. New
  // properties (a new bundle, other plans) make every such deploy sync again.
  const code = (fn.function.node.defaultChild as CfnFunction).code as CfnFunction.CodeProperty
  const onDeploy = new CustomResource(scope, 'KeySyncOnDeploy', {
    serviceToken: fn.function.functionArn,
    resourceType: 'Custom::KeySync',
    // The function answers before it syncs (key-sync-handler.ts): seconds, whatever the sync does.
    serviceTimeout: Duration.minutes(3),
    properties: {
      Code: Stack.of(scope).resolve(code.s3Key),
      UsagePlanIds: usagePlans.map((plan) => plan.usagePlanId),
    },
  })
  // After the stage is live and the function may do what a sync does. The plans need no entry:
  // UsagePlanIds refers to them already (an explicit one is cfn-lint's W3005).
  onDeploy.node.addDependency(api.deploymentStage, fn.role)
  return fn
}
