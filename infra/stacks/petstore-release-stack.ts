// One stage's release access: the role its GitHub Actions deploy job assumes.
import { type App, LegacyStackSynthesizer, Stack, type StackProps, Tags } from 'aws-cdk-lib'
import { type ReleaseConfig, readReleaseConfig } from '#infra/config/release-config.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import type { ContextReader } from '#infra/config/stage-context-reader.ts'
import { GitHubDeployRole } from '#infra/constructs/github-deploy-role-construct.ts'
import { ReleasePermissions } from '#infra/constructs/release-permissions-construct.ts'
import { stageEnv } from './petstore-stage-stacks.ts'

export interface PetstoreReleaseStackProps extends StackProps {
  stage: string
  release: ReleaseConfig
}

/**
 * Deployed once per stage by an administrator with their own credentials (`npx cdk deploy
 * petstore-release-<stage>`), never by the pipeline: it uses no bootstrap role at all (the legacy
 * synthesizer deploys with the CLI's credentials and needs no bootstrap), so it exists before
 * `cdk bootstrap` names its policies, and the bootstrap roles' boundary denies every change to a
 * `petstore-release-*` stack, its role and its policies (docs/release-permissions.md).
 */
export class PetstoreReleaseStack extends Stack {
  readonly deployRole: GitHubDeployRole
  readonly permissions: ReleasePermissions

  constructor(scope: App, id: string, { stage, release, ...props }: PetstoreReleaseStackProps) {
    super(scope, id, { synthesizer: new LegacyStackSynthesizer(), ...props })
    this.permissions = new ReleasePermissions(this, 'Permissions', { stage })
    this.deployRole = new GitHubDeployRole(this, 'GitHubDeployRole', { stage, release })
  }
}

export const releaseStackName = (stage: string): string => `petstore-release-${stage}`

/** The release stacks of the synthesized stages, when the context names a repository. */
export const addReleaseStacks = (
  app: App,
  stages: readonly StageConfig[],
): PetstoreReleaseStack[] => {
  const context: ContextReader = (key) => app.node.tryGetContext(key)
  const release = readReleaseConfig(context)
  if (!release) return []
  return stages.map((config) => {
    const stack = new PetstoreReleaseStack(app, releaseStackName(config.stage), {
      stage: config.stage,
      release,
      description: `Petstore ${config.stage}: the role the release pipeline deploys and smokes it with`,
      ...stageEnv(config),
    })
    Tags.of(stack).add('petstore:stage', config.stage)
    return stack
  })
}
