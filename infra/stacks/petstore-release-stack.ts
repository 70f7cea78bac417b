// One stage's release access: the role its GitHub Actions deploy job assumes.
import {
  type App,
  CfnOutput,
  LegacyStackSynthesizer,
  Stack,
  type StackProps,
  Tags,
} from 'aws-cdk-lib'
import { type PetstoreSettings, settingsReader } from '#infra/config/cdk-json-settings.ts'
import {
  makesOidcProvider,
  oidcSubjects,
  type ReleaseConfig,
  readReleaseConfig,
  releaseEnvironments,
} from '#infra/config/release-config.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { GitHubDeployRole } from '#infra/constructs/github-deploy-role-construct.ts'
import { ReleasePermissions } from '#infra/constructs/release-permissions-construct.ts'
import { PLAN_ENVIRONMENT } from '#shared/config/production-approval-config.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import { stageEnv } from './petstore-stage-stacks.ts'

/** The outputs an operator copies and checks (docs/deploying.md, "The release stacks"). */
export const RELEASE_STACK_OUTPUTS = [
  'RoleArn',
  'PlanRoleArn',
  'OidcProviderArn',
  'TrustedSubjects',
  'BootstrapCommand',
] as const

export interface PetstoreReleaseStackProps extends StackProps {
  stage: StageName
  release: ReleaseConfig
}

/**
 * Deployed once per stage by an administrator with their own credentials
 * (`npm run release:setup:<stage>`), never by the pipeline: its name is outside
 * `petstore-<stage>-*`, the stacks the pipeline deploys, and it uses no bootstrap role at all (the
 * legacy synthesizer deploys with the CLI's credentials and needs no bootstrap), so it exists before
 * `cdk bootstrap` names its policies, and the bootstrap roles' boundary denies every change to a
 * `petstore-release-*` stack, its role and its policies (docs/release-permissions.md). Its outputs
 * are what the GitHub environments need and what an operator checks: `RoleArn` (a stage's deploy
 * role; production's only where reviewers gate it), `PlanRoleArn` (production's plan role),
 * `OidcProviderArn`, `TrustedSubjects`, `BootstrapCommand`.
 */
export class PetstoreReleaseStack extends Stack {
  readonly deployRole: GitHubDeployRole
  readonly permissions: ReleasePermissions

  constructor(scope: App, id: string, { stage, release, ...props }: PetstoreReleaseStackProps) {
    super(scope, id, { synthesizer: new LegacyStackSynthesizer(), ...props })
    this.permissions = new ReleasePermissions(this, 'Permissions', { stage })
    this.deployRole = new GitHubDeployRole(this, 'GitHubDeployRole', { stage, release })
    const [roleArn, planRoleArn, providerArn, subjects, bootstrap] = RELEASE_STACK_OUTPUTS
    if (this.deployRole.role) {
      new CfnOutput(this, roleArn, {
        value: this.deployRole.role.roleArn,
        description: `Set as the ${stage} environment's AWS_DEPLOY_ROLE_ARN variable in GitHub`,
      })
    }
    if (this.deployRole.planRole) {
      new CfnOutput(this, planRoleArn, {
        value: this.deployRole.planRole.roleArn,
        description: `Set as the ${PLAN_ENVIRONMENT} environment's AWS_PLAN_ROLE_ARN variable in GitHub`,
      })
    }
    new CfnOutput(this, providerArn, {
      value: this.deployRole.providerArn,
      description: "The account's GitHub OIDC provider the role trusts",
    })
    const environments = releaseEnvironments(release, stage)
    new CfnOutput(this, subjects, {
      value: environments.flatMap((environment) => oidcSubjects(release, environment)).join(' '),
      description: `The OIDC subjects (sub) the roles accept, each matched exactly: GitHub's for a job in the ${environments.join(' or ')} environment`,
    })
    new CfnOutput(this, bootstrap, {
      value: this.permissions.bootstrapCommand,
      description: `How to bootstrap ${stage}'s account and Region with these policies (an administrator, once)`,
    })
  }
}

export const releaseStackName = (stage: string): string => `petstore-release-${stage}`

/**
 * The release stacks of the synthesized stages, when cdk.json names a repository. In an account
 * both stages share, staging's stack makes the account's GitHub provider and production's uses
 * it, so production's stack comes second.
 */
export const addReleaseStacks = (
  app: App,
  stages: readonly StageConfig[],
  settings: PetstoreSettings,
): PetstoreReleaseStack[] => {
  const release = readReleaseConfig(settingsReader(settings))
  if (!release) return []
  const stacks = new Map<StageName, PetstoreReleaseStack>()
  for (const config of stages) {
    const stack = new PetstoreReleaseStack(app, releaseStackName(config.stage), {
      stage: config.stage,
      release,
      description: `Petstore ${config.stage}: the role the release pipeline deploys and smokes it with`,
      ...stageEnv(config),
    })
    Tags.of(stack).add('petstore:stage', config.stage)
    stacks.set(config.stage, stack)
  }
  const staging = stacks.get('staging')
  const production = stacks.get('production')
  if (staging && production && makesOidcProvider(release, 'staging')) {
    if (release.accounts.staging === release.accounts.production) {
      production.addStackDependency(
        staging,
        "staging's stack makes the account's GitHub OIDC provider",
      )
    }
  }
  return [...stacks.values()]
}
