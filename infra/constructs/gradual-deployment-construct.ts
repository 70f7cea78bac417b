import { Duration, Validations } from 'aws-cdk-lib'
import {
  Alarm,
  ComparisonOperator,
  type IAlarm,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import { LambdaDeploymentConfig, LambdaDeploymentGroup } from 'aws-cdk-lib/aws-codedeploy'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import type { PetstoreFunction } from './petstore-function-construct.ts'

export interface GradualDeploymentProps {
  stage: string
  /** The functions callers reach through their live alias (operations and the authorizer). */
  functions: readonly { name: string; fn: PetstoreFunction }[]
  /** Stage-wide alarms that also stop a rollout (the API's 5xx rate). */
  stageAlarms: readonly IAlarm[]
  /** Where alarms notify on-call (the monitoring topic). */
  alarmTopic: ITopic
}

/**
 * Bad deploys roll back by themselves: each function's `live` alias moves to a new version
 * through CodeDeploy, 10% of its traffic for 5 minutes first (CANARY_10PERCENT_5MINUTES), then
 * the rest; if the new version's errors alarm or the stage's 5xx alarm fires meanwhile,
 * CodeDeploy moves the alias back.
 *
 * The errors alarm counts the new version alone: Lambda splits a weighted alias's metrics by
 * version with the ExecutedVersion dimension ("Working with Lambda function metrics", AWS Lambda
 * Developer Guide). An alarm on the whole alias would also count the old version's errors, which
 * keep 90% of the traffic during the canary, and roll back the very deploy meant to fix them.
 */
export const addGradualDeployments = (
  scope: Construct,
  { stage, functions, stageAlarms, alarmTopic }: GradualDeploymentProps,
): LambdaDeploymentGroup[] =>
  functions.map(({ name, fn }) => {
    const alias = fn.alias
    if (!alias) throw new Error(`${name} has no live alias to shift traffic on`)
    const functionName = fn.function.functionName
    const errors = new Alarm(scope, `${name}LiveAliasErrorsAlarm`, {
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
    errors.addAlarmAction(new SnsAction(alarmTopic))
    errors.addOkAction(new SnsAction(alarmTopic))
    // The alarm watches the new version before the alias starts shifting traffic to it.
    alias.node.addDependency(errors)
    const group = new LambdaDeploymentGroup(scope, `${name}Deployment`, {
      alias,
      deploymentConfig: LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
      alarms: [errors, ...stageAlarms],
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    })
    Validations.of(group).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      reason:
        "CodeDeploy's own service role for Lambda deployments: the AWS-managed policy is the documented minimum for shifting alias traffic and reading the alarms.",
    })
    return group
  })
