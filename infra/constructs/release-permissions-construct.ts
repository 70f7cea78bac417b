// The policies of a stage's least-privilege bootstrap, made by the release stack (an administrator).
import { Stack, Token, Validations } from 'aws-cdk-lib'
import { ManagedPolicy, PolicyDocument } from 'aws-cdk-lib/aws-iam'
import { Construct } from 'constructs'
import { EXECUTION_PERMISSIONS } from '#infra/config/execution-permissions-config.ts'
import {
  bootstrapBoundaryDocument,
  bootstrapBoundaryName,
  executionPolicyDocuments,
  executionPolicyName,
  type PolicyDocumentJson,
} from '#infra/config/release-permissions-config.ts'
import { roleBoundaryDocument, roleBoundaryName } from '#shared/config/role-boundary-config.ts'

export interface ReleasePermissionsProps {
  stage: string
}

/**
 * The CloudFormation execution policy (one managed policy per 6 KB of it), the permissions boundary
 * every role of the stage's stacks carries, and the boundary of the bootstrap's own roles
 * (docs/release-permissions.md). `BootstrapCommand` prints the `cdk bootstrap` that uses them.
 */
export class ReleasePermissions extends Construct {
  readonly executionPolicies: ManagedPolicy[]
  readonly roleBoundary: ManagedPolicy
  readonly bootstrapBoundary: ManagedPolicy
  /** `cdk bootstrap` with these policies: the release stack prints it (its output `BootstrapCommand`). */
  readonly bootstrapCommand: string

  constructor(scope: Construct, id: string, { stage }: ReleasePermissionsProps) {
    super(scope, id)
    const { account, region, partition } = Stack.of(this)
    const executionDocuments = executionPolicyDocuments(
      { partition, region, account, stage },
      EXECUTION_PERMISSIONS,
    )
    const bootstrapDocument = bootstrapBoundaryDocument({ partition, account })
    this.executionPolicies = executionDocuments.map(
      (document, index) =>
        new ManagedPolicy(this, `ExecutionPolicy${index + 1}`, {
          managedPolicyName: `${executionPolicyName(stage)}-${index + 1}`,
          description: `What CloudFormation may do for the ${stage} stage's stacks (part ${index + 1})`,
          document: PolicyDocument.fromJson(document),
        }),
    )
    this.roleBoundary = new ManagedPolicy(this, 'RoleBoundary', {
      managedPolicyName: roleBoundaryName(stage),
      description: `The permissions boundary of every role the ${stage} stage's stacks create`,
      document: PolicyDocument.fromJson(roleBoundaryDocument()),
    })
    this.bootstrapBoundary = new ManagedPolicy(this, 'BootstrapBoundary', {
      managedPolicyName: bootstrapBoundaryName(stage),
      description: 'The permissions boundary of the CDK bootstrap roles the release path uses',
      document: PolicyDocument.fromJson(bootstrapDocument),
    })
    // cdk-nag names each wildcard on its own; every one is acknowledged with the same reason.
    const shown = (value: string, pseudo: string) =>
      Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value
    const display = (text: string) =>
      text
        .replaceAll(partition, shown(partition, 'Partition'))
        .replaceAll(region, shown(region, 'Region'))
        .replaceAll(account, shown(account, 'AccountId'))
    const documents: [ManagedPolicy, PolicyDocumentJson][] = [
      ...this.executionPolicies.map((policy, index): [ManagedPolicy, PolicyDocumentJson] => [
        policy,
        executionDocuments[index] as PolicyDocumentJson,
      ]),
      [this.roleBoundary, roleBoundaryDocument()],
      [this.bootstrapBoundary, bootstrapDocument],
    ]
    for (const [policy, document] of documents) {
      for (const finding of wildcardFindings(document)) {
        Validations.of(policy).acknowledge({
          id: `AwsSolutions-IAM5[${display(finding)}]`,
          reason:
            "A stage's own resources (a CloudFormation-made name's suffix, the stage's role path or log groups), an action family of one resource type, a boundary's ceiling or a Deny: docs/release-permissions.md.",
        })
      }
    }
    this.bootstrapCommand = [
      `npx cdk bootstrap aws://${account}/${region}`,
      ...this.executionPolicies.map(
        (policy) => `--cloudformation-execution-policies ${policy.managedPolicyArn}`,
      ),
      `--custom-permissions-boundary ${bootstrapBoundaryName(stage)}`,
      '--apply-permissions-boundary-to-all-roles',
    ].join(' ')
  }
}

/** cdk-nag's AwsSolutions-IAM5 findings of a document: each action and resource with a `*`. */
const wildcardFindings = (document: PolicyDocumentJson): Set<string> => {
  const findings = new Set<string>()
  for (const statement of document.Statement) {
    for (const action of (statement.Action as string[] | undefined) ?? []) {
      if (action.includes('*')) findings.add(`Action::${action}`)
    }
    for (const resource of statement.Resource as string[]) {
      if (resource.includes('*')) findings.add(`Resource::${resource}`)
    }
  }
  return findings
}
