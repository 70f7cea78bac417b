// Every IAM role of a stage's stacks on the stage's path, with the stage's permissions boundary.
import { AspectPriority, Aspects, type IAspect, Stack } from 'aws-cdk-lib'
import { CfnRole } from 'aws-cdk-lib/aws-iam'
import type { IConstruct } from 'constructs'
import { stageRolePath } from '#infra/config/release-permissions-config.ts'
import { roleBoundaryName } from '#shared/config/role-boundary-config.ts'

/**
 * The execution policy lets CloudFormation create, change and pass only roles under
 * `/petstore-<stage>/`, and create them only with the stage's boundary
 * (infra/config/execution-permissions-config.ts): this puts every role the stage's constructs make
 * there, CDK's own included, so no construct has to remember it.
 */
class StageRoles implements IAspect {
  constructor(private readonly stage: string) {}

  visit(node: IConstruct): void {
    if (!(node instanceof CfnRole)) return
    node.path = stageRolePath(this.stage)
    node.permissionsBoundary = Stack.of(node).formatArn({
      service: 'iam',
      region: '',
      resource: 'policy',
      resourceName: roleBoundaryName(this.stage),
    })
  }
}

/** Applies the stage's role path and boundary to every role under `scope`. */
export const applyStageRoles = (scope: IConstruct, stage: string): void => {
  Aspects.of(scope).add(new StageRoles(stage), { priority: AspectPriority.MUTATING })
}
