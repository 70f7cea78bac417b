// The IAM role production's plan job assumes: it prepares change sets and executes none.
import { Duration, Stack, Token, Validations } from 'aws-cdk-lib'
import { type IPrincipal, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam'
import { Construct } from 'constructs'
import type { ReleaseConfig } from '#infra/config/release-config.ts'
import { PLAN_ENVIRONMENT } from '#shared/config/production-approval-config.ts'
import { stackName } from '#shared/config/stack-names-config.ts'
import type { StageName } from '#shared/config/stages-config.ts'

/**
 * cdk-nag's acknowledgement of each wildcard resource of a release role's statement, named as
 * cdk-nag names it (the stack's partition, Region and account shown as pseudo parameters when
 * they are tokens), with the reason the wildcard is the stage's own.
 */
export const acknowledgeWildcards = (role: Role, resources: string[], reason: string): void => {
  const { partition, region, account } = Stack.of(role)
  const shown = (value: string, pseudo: string) =>
    Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value
  for (const resource of resources) {
    const display = resource
      .replace(partition, shown(partition, 'Partition'))
      .replace(region, shown(region, 'Region'))
      .replace(account, shown(account, 'AccountId'))
    Validations.of(role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${display}]`, reason })
  }
}

export interface GitHubPlanRoleProps {
  stage: StageName
  release: ReleaseConfig
  /** A job of the repository in the `production-plan` environment, by its exact OIDC subject. */
  assumedBy: IPrincipal
}

/**
 * What `cdk deploy --method=prepare-change-set` needs and nothing that executes: the plan job of
 * the `production-plan` GitHub environment (its own OIDC subject) creates, describes and deletes
 * change sets of the stage's two stacks, each run by the bootstrap's CloudFormation execution role
 * (`cloudformation:RoleArn`), which it may pass to CloudFormation only; it publishes the assets
 * those change sets name through the bootstrap's file-publishing role and reads the bootstrap
 * version and the templates CloudFormation fetches with its credentials. It holds no
 * `ExecuteChangeSet`, no stack create, update or delete, no termination protection change and may
 * not assume the deploy role (whose `cloudformation:*` would execute): the CDK CLI, finding the
 * deploy role out of reach, proceeds with these credentials ("could not be used to assume …, but
 * are for the right account. Proceeding anyway"). docs/release-permissions.md, "The production
 * plan role"; its escalation table: test/infra/escalation-table.test.ts.
 */
export class GitHubPlanRole extends Construct {
  readonly role: Role

  constructor(scope: Construct, id: string, { stage, release, assumedBy }: GitHubPlanRoleProps) {
    super(scope, id)
    const { account, region, partition } = Stack.of(this)
    this.role = new Role(this, 'Role', {
      roleName: `petstore-${stage}-plan-${region}`,
      description: `GitHub Actions (${release.githubRepository}, environment ${PLAN_ENVIRONMENT}): prepares the ${stage} stage's change sets, executes none`,
      maxSessionDuration: Duration.hours(1),
      assumedBy,
    })
    const q = release.bootstrapQualifier
    const bootstrapRole = (name: string) =>
      `arn:${partition}:iam::${account}:role/cdk-${q}-${name}-${account}-${region}`
    const stacks = (['data', 'api'] as const).map(
      (part) =>
        `arn:${partition}:cloudformation:${region}:${account}:stack/${stackName(stage, part)}/*`,
    )
    const acknowledge = (resources: string[], reason: string) =>
      acknowledgeWildcards(this.role, resources, reason)
    const stackWhy =
      "The stage's two stacks by name: the * is the stack id CloudFormation appends to a stack's ARN."
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'PrepareChangeSets',
        actions: ['cloudformation:CreateChangeSet'],
        resources: stacks,
        conditions: { ArnEquals: { 'cloudformation:RoleArn': bootstrapRole('cfn-exec-role') } },
      }),
    )
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'ReadAndCleanUpChangeSets',
        actions: [
          'cloudformation:DescribeChangeSet',
          'cloudformation:DeleteChangeSet',
          'cloudformation:ListChangeSets',
          'cloudformation:DescribeStacks',
          'cloudformation:DescribeStackEvents',
          'cloudformation:GetTemplate',
        ],
        resources: stacks,
      }),
    )
    acknowledge(stacks, stackWhy)
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'PassExecutionRoleToCloudFormation',
        actions: ['iam:PassRole'],
        resources: [bootstrapRole('cfn-exec-role')],
        conditions: { StringEquals: { 'iam:PassedToService': 'cloudformation.amazonaws.com' } },
      }),
    )
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'PublishAssets',
        actions: ['sts:AssumeRole'],
        resources: [bootstrapRole('file-publishing-role')],
      }),
    )
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'ReadBootstrapVersion',
        actions: ['ssm:GetParameter'],
        resources: [
          `arn:${partition}:ssm:${region}:${account}:parameter/cdk-bootstrap/${q}/version`,
        ],
      }),
    )
    const templates = [`arn:${partition}:s3:::cdk-${q}-assets-${account}-${region}/*`]
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'ReadTemplates',
        actions: ['s3:GetObject'],
        resources: templates,
      }),
    )
    acknowledge(
      templates,
      "The bootstrap bucket's objects: CloudFormation fetches a change set's template from it with the caller's credentials; object keys are asset hashes.",
    )
  }
}
