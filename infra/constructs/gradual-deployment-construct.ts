import { Duration, Validations } from 'aws-cdk-lib'
import {
  Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import { LambdaDeploymentConfig, LambdaDeploymentGroup } from 'aws-cdk-lib/aws-codedeploy'
import type { Alias } from 'aws-cdk-lib/aws-lambda'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import {
  METRICS_SERVICE,
  OPERATION_DIMENSION,
  VERSION_DIMENSION,
} from '#shared/observability/metrics.ts'
import type { PetstoreFunction } from './petstore-function-construct.ts'

/** What a rollout of one function watches on the version it is moving to. */
export interface RolledOutFunction {
  name: string
  fn: PetstoreFunction
  /**
   * The function's own 0-or-1 failure metric, published per version (publishPerVersion): an
   * operation's Http5xx, the authorizer's AuthorizerErrors.
   */
  failureMetric: { operation: string; metricName: string }
  /**
   * Whether Lambda's `Errors` of the new version also mean failure. True for the operations (an
   * error that escapes the handler, a timeout or a crash); false for the authorizer, which throws
   * "Unauthorized" for every refused key.
   */
  lambdaErrorsAreFailures: boolean
}

export interface GradualDeploymentProps {
  stage: string
  metricsNamespace: string
  functions: readonly RolledOutFunction[]
  /** Where alarms notify on-call (the monitoring topic). */
  alarmTopic: ITopic
}

/**
 * A rollout rolls back when the new version fails at least this many requests in a minute and
 * at least this share of them: one transient DynamoDB error in a quiet canary minute is not a
 * bad release, every answer failing is.
 */
export const ROLLBACK_THRESHOLD = { failuresPerMinute: 3, failureRate: 0.05 } as const

/**
 * Bad deploys roll back by themselves: each function's `live` alias moves to a new version
 * through CodeDeploy, 10% of its traffic for 5 minutes first (CANARY_10PERCENT_5MINUTES), then
 * the rest; if an alarm on the new version's own failures fires meanwhile, CodeDeploy moves the
 * alias back. Nothing stage-wide gates a rollout: the API's 5xx rate mixes versions and
 * operations (a broken getPet at 10% of getPet's traffic stays under it), and any caller could
 * veto a release with bad keys if the authorizer's 401s counted.
 *
 * Every alarm counts the new version alone: the functions publish their failure metric with the
 * version as a dimension, and Lambda splits a weighted alias's metrics by version with
 * ExecutedVersion ("Working with Lambda function metrics", AWS Lambda Developer Guide). Alarms on
 * the whole alias would also count the old version's failures, which keep 90% of the traffic
 * during the canary, and roll back the very deploy meant to fix them.
 */
export const addGradualDeployments = (
  scope: Construct,
  props: GradualDeploymentProps,
): LambdaDeploymentGroup[] =>
  props.functions.map((rolledOut) => {
    const { stage, alarmTopic } = props
    const { name, fn } = rolledOut
    const alias = fn.alias
    if (!alias) throw new Error(`${name} has no live alias to shift traffic on`)
    const alarms = [
      versionFailureAlarm(scope, props, rolledOut, alias),
      ...(rolledOut.lambdaErrorsAreFailures
        ? [versionErrorsAlarm(scope, stage, rolledOut, alias)]
        : []),
    ]
    for (const alarm of alarms) {
      alarm.addAlarmAction(new SnsAction(alarmTopic))
      alarm.addOkAction(new SnsAction(alarmTopic))
      // The alarms watch the new version before the alias starts shifting traffic to it.
      alias.node.addDependency(alarm)
    }
    const group = new LambdaDeploymentGroup(scope, `${name}Deployment`, {
      alias,
      deploymentConfig: LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
      alarms,
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    })
    Validations.of(group).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      reason:
        "CodeDeploy's own service role for Lambda deployments: the AWS-managed policy is the documented minimum for shifting alias traffic and reading the alarms.",
    })
    return group
  })

/** The new version's own failures (5xx answers, or failures to decide) over ROLLBACK_THRESHOLD. */
const versionFailureAlarm = (
  scope: Construct,
  { stage, metricsNamespace }: GradualDeploymentProps,
  { name, failureMetric }: RolledOutFunction,
  alias: Alias,
): Alarm => {
  const metric = (statistic: 'Sum' | 'SampleCount') =>
    new Metric({
      namespace: metricsNamespace,
      metricName: failureMetric.metricName,
      dimensionsMap: {
        service: METRICS_SERVICE,
        [OPERATION_DIMENSION]: failureMetric.operation,
        [VERSION_DIMENSION]: alias.version.version,
      },
      statistic,
      period: Duration.minutes(1),
    })
  const { failuresPerMinute, failureRate } = ROLLBACK_THRESHOLD
  return new Alarm(scope, `${name}NewVersionFailuresAlarm`, {
    alarmDescription: `Petstore ${stage}: the version of ${name} being rolled out failed ${failuresPerMinute} or more requests in a minute, and ${failureRate * 100}% or more of them (${failureMetric.metricName}); the rollout rolls back.`,
    metric: new MathExpression({
      label: `${name} new version failing`,
      expression: `IF(failures >= ${failuresPerMinute} AND failures / requests >= ${failureRate}, 1, 0)`,
      usingMetrics: { failures: metric('Sum'), requests: metric('SampleCount') },
      period: Duration.minutes(1),
    }),
    threshold: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  })
}

/** Lambda's Errors of the new version: errors that escaped the handler, timeouts, crashes. */
const versionErrorsAlarm = (
  scope: Construct,
  stage: string,
  { name, fn }: RolledOutFunction,
  alias: Alias,
): Alarm => {
  const functionName = fn.function.functionName
  return new Alarm(scope, `${name}LiveAliasErrorsAlarm`, {
    alarmDescription: `Petstore ${stage}: the version of ${name} being rolled out threw errors behind the ${alias.aliasName} alias (the rollout rolls back).`,
    metric: new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      dimensionsMap: {
        FunctionName: functionName,
        Resource: `${functionName}:${alias.aliasName}`,
        ExecutedVersion: alias.version.version,
      },
      statistic: 'Sum',
      period: Duration.minutes(1),
    }),
    threshold: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  })
}
