import { Duration, Validations } from 'aws-cdk-lib'
import {
  Alarm,
  ComparisonOperator,
  type IAlarm,
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
 * the rest; if the new version's errors alarm (on the alias, so on the version taking the
 * traffic) or the stage's 5xx alarm fires meanwhile, CodeDeploy moves the alias back.
 */
export const addGradualDeployments = (
  scope: Construct,
  { stage, functions, stageAlarms, alarmTopic }: GradualDeploymentProps,
): LambdaDeploymentGroup[] =>
  functions.map(({ name, fn }) => {
    const alias = fn.alias
    if (!alias) throw new Error(`${name} has no live alias to shift traffic on`)
    const errors = new Alarm(scope, `${name}LiveAliasErrorsAlarm`, {
      alarmDescription: `Petstore ${stage}: the live version of ${name} threw errors (a rollout in progress rolls back).`,
      metric: alias.metricErrors({ period: Duration.minutes(1) }),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    })
    errors.addAlarmAction(new SnsAction(alarmTopic))
    errors.addOkAction(new SnsAction(alarmTopic))
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
