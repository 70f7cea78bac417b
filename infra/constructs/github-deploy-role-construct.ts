// The IAM role a stage's deploy job in GitHub Actions assumes through OIDC: deploy, then smoke.
import { CfnOutput, Duration, Stack, Token, Validations } from 'aws-cdk-lib'
import { CfnOIDCProvider, PolicyStatement, Role, WebIdentityPrincipal } from 'aws-cdk-lib/aws-iam'
import { Construct } from 'constructs'
import type { ReleaseConfig } from '#infra/config/release-config.ts'
import { stackName } from '#shared/config/stack-names-config.ts'

/** GitHub's OIDC issuer and the audience its official AWS credentials action asks for. */
export const GITHUB_OIDC_HOST = 'token.actions.githubusercontent.com'
export const GITHUB_OIDC_AUDIENCE = 'sts.amazonaws.com'

/**
 * The bootstrap roles `cdk deploy --app <assembly>` assumes: the deploy role (it passes the
 * CloudFormation execution role on) and the file-publishing role (it uploads the bundles). No
 * lookup role (the app makes no context lookups) and no image publishing (no container assets).
 */
export const BOOTSTRAP_ROLES_ASSUMED = ['deploy-role', 'file-publishing-role'] as const

export interface GitHubDeployRoleProps {
  stage: string
  release: ReleaseConfig
}

/**
 * Least privilege for one stage's deploy job: assume that account's bootstrap roles and read the
 * stage's stack outputs (the smoke test's base URL). No API key management at all: the smoke test
 * calls with the stage's dedicated key, a GitHub environment secret (docs/release-permissions.md). Only
 * a workflow job of the named repository running in the GitHub environment named after the stage
 * can assume it (OIDC `sub` = `repo:<owner>/<name>:environment:<stage>`); the environment's own
 * rules (required reviewers, deployment branches) decide which runs get there.
 */
export class GitHubDeployRole extends Construct {
  readonly role: Role

  constructor(scope: Construct, id: string, { stage, release }: GitHubDeployRoleProps) {
    super(scope, id)
    const { account, region, partition } = Stack.of(this)
    const providerArn =
      release.oidcProviderArn ??
      new CfnOIDCProvider(this, 'GitHubOidcProvider', {
        url: `https://${GITHUB_OIDC_HOST}`,
        clientIdList: [GITHUB_OIDC_AUDIENCE],
      }).attrArn
    this.role = new Role(this, 'Role', {
      roleName: `petstore-${stage}-release-${region}`,
      description: `GitHub Actions (${release.githubRepository}, environment ${stage}): deploys and smokes the ${stage} stage`,
      maxSessionDuration: Duration.hours(1),
      assumedBy: new WebIdentityPrincipal(providerArn, {
        StringEquals: {
          [`${GITHUB_OIDC_HOST}:aud`]: GITHUB_OIDC_AUDIENCE,
          [`${GITHUB_OIDC_HOST}:sub`]: `repo:${release.githubRepository}:environment:${stage}`,
        },
      }),
    })
    const q = release.bootstrapQualifier
    this.role.addToPolicy(
      new PolicyStatement({
        sid: 'AssumeBootstrapRoles',
        actions: ['sts:AssumeRole'],
        resources: BOOTSTRAP_ROLES_ASSUMED.map(
          (role) => `arn:${partition}:iam::${account}:role/cdk-${q}-${role}-${account}-${region}`,
        ),
      }),
    )
    // Each wildcard is a stack's own resources: a stack id's suffix, a CloudFormation-made name's.
    const scoped = (sid: string, action: string, resources: string[], why: string) => {
      this.role.addToPolicy(new PolicyStatement({ sid, actions: [action], resources }))
      const shown = (value: string, pseudo: string) =>
        Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value
      for (const resource of resources) {
        const display = resource
          .replace(partition, shown(partition, 'Partition'))
          .replace(region, shown(region, 'Region'))
          .replace(account, shown(account, 'AccountId'))
        Validations.of(this.role).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${display}]`,
          reason: why,
        })
      }
    }
    const stackArn = (part: 'api' | 'data') =>
      `arn:${partition}:cloudformation:${region}:${account}:stack/${stackName(stage, part)}/*`
    scoped(
      'ReadStageOutputs',
      'cloudformation:DescribeStacks',
      [stackArn('api'), stackArn('data')],
      "The stage's two stacks by name: the * is the stack id CloudFormation appends to a stack's ARN.",
    )
    new CfnOutput(this, 'RoleArn', {
      value: this.role.roleArn,
      description: `Set as the ${stage} environment's AWS_DEPLOY_ROLE_ARN variable in GitHub`,
    })
  }
}
