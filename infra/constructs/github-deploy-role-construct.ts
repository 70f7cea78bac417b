// The IAM role a stage's deploy job in GitHub Actions assumes through OIDC: deploy, then smoke.
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib'
import { CfnOIDCProvider, PolicyStatement, Role, WebIdentityPrincipal } from 'aws-cdk-lib/aws-iam'
import { Construct } from 'constructs'
import {
  makesOidcProvider,
  oidcSubjects,
  type ReleaseConfig,
  releaseEnvironments,
} from '#infra/config/release-config.ts'
import { PLAN_ENVIRONMENT } from '#shared/config/production-approval-config.ts'
import { stackName } from '#shared/config/stack-names-config.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import { acknowledgeWildcards, GitHubPlanRole } from './github-plan-role-construct.ts'

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
  stage: StageName
  release: ReleaseConfig
}

/**
 * Least privilege for one stage's deploy job: assume that account's bootstrap roles and read the
 * stage's stack outputs (the smoke test's base URL). No API key management at all: the smoke test
 * calls with the stage's dedicated key, a GitHub environment secret (docs/release-permissions.md). Only
 * a workflow job of the named repository running in the GitHub environment named after the stage
 * can assume it: the OIDC `sub` must equal, exactly, the subject GitHub sends for that job
 * (`oidcSubjects`: `repo:OWNER@OWNER_ID/REPO@REPO_ID:environment:<stage>` with the ids set, the
 * name form without them, both only while migrating); the environment's own rules (required
 * reviewers, deployment branches) decide which runs get there.
 */
/**
 * Who may assume a release role: a GitHub Actions job of the repository in one environment,
 * by the exact OIDC subject(s) GitHub sends for it and the audience of its official action.
 */
export const githubJobPrincipal = (providerArn: string, subjects: string[]): WebIdentityPrincipal =>
  new WebIdentityPrincipal(providerArn, {
    StringEquals: {
      [`${GITHUB_OIDC_HOST}:aud`]: GITHUB_OIDC_AUDIENCE,
      [`${GITHUB_OIDC_HOST}:sub`]: subjects.length === 1 ? subjects[0] : subjects,
    },
  })

export class GitHubDeployRole extends Construct {
  /** The stage's deploy role; production has none where a person applies its plans. */
  readonly role: Role | undefined
  /** Production's plan role: prepares change sets, executes none. */
  readonly planRole: Role | undefined
  /** The account's GitHub OIDC provider, made here or already there. */
  readonly providerArn: string

  constructor(scope: Construct, id: string, { stage, release }: GitHubDeployRoleProps) {
    super(scope, id)
    const { account, partition } = Stack.of(this)
    this.providerArn = makesOidcProvider(release, stage)
      ? this.makeProvider()
      : `arn:${partition}:iam::${account}:oidc-provider/${GITHUB_OIDC_HOST}`
    const environments = releaseEnvironments(release, stage)
    this.role = environments.includes(stage) ? this.makeDeployRole(stage, release) : undefined
    this.planRole = environments.includes(PLAN_ENVIRONMENT)
      ? new GitHubPlanRole(this, 'PlanRole', {
          stage,
          release,
          assumedBy: githubJobPrincipal(this.providerArn, oidcSubjects(release, PLAN_ENVIRONMENT)),
        }).role
      : undefined
  }

  private makeDeployRole(stage: StageName, release: ReleaseConfig): Role {
    const { account, region, partition } = Stack.of(this)
    const role = new Role(this, 'Role', {
      roleName: `petstore-${stage}-release-${region}`,
      description: `GitHub Actions (${release.githubRepository}, environment ${stage}): deploys and smokes the ${stage} stage`,
      maxSessionDuration: Duration.hours(1),
      assumedBy: githubJobPrincipal(this.providerArn, oidcSubjects(release, stage)),
    })
    const q = release.bootstrapQualifier
    role.addToPolicy(
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
      role.addToPolicy(new PolicyStatement({ sid, actions: [action], resources }))
      acknowledgeWildcards(role, resources, why)
    }
    const stackArn = (part: 'api' | 'data') =>
      `arn:${partition}:cloudformation:${region}:${account}:stack/${stackName(stage, part)}/*`
    scoped(
      'ReadStageOutputs',
      'cloudformation:DescribeStacks',
      [stackArn('api'), stackArn('data')],
      "The stage's two stacks by name: the * is the stack id CloudFormation appends to a stack's ARN.",
    )
    return role
  }

  /**
   * The account's one provider for GitHub's tokens. Kept once created, as other roles of the
   * account may come to trust it (RetainExceptOnCreate): a failed first create leaves none behind.
   */
  private makeProvider(): string {
    const provider = new CfnOIDCProvider(this, 'GitHubOidcProvider', {
      url: `https://${GITHUB_OIDC_HOST}`,
      clientIdList: [GITHUB_OIDC_AUDIENCE],
    })
    provider.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
    return provider.attrArn
  }
}
