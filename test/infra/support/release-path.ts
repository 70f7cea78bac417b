import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import { readReleaseConfig } from '#infra/config/release-config.ts'
import { PetstoreReleaseStack } from '#infra/stacks/petstore-release-stack.ts'
import {
  type CompiledPolicies,
  compilePolicies,
  type PolicyDocument,
} from '#local/iam/iam-policy-evaluator.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import { bootstrapRole } from './bootstrap-template.ts'
import { type DeployScope, deployedStage } from './deployed-names.ts'
import { RELEASE_SETTINGS, settingsOf } from './stage-settings.ts'

/**
 * The identities a release acts through, as IAM would see them in one stage's account: the
 * release role (synthesized release stack), the CDK deploy and file-publishing roles (the pinned
 * bootstrap template, bootstrapped as docs/release-permissions.md says) and the CloudFormation
 * execution role (the execution policy), each with the bootstrap boundary the release stack makes.
 */
export const ACCOUNT = '111111111111'
export const REGION = 'eu-west-1'
export const QUALIFIER = 'hnb659fds'

export const scopeOf = (stage: string): DeployScope => ({
  partition: 'aws',
  region: REGION,
  account: ACCOUNT,
  stage,
})

/**
 * AWSCloudFormationReadOnlyAccess, attached to the deploy role by the bootstrap template: its
 * document as the AWS Managed Policy Reference gives it (a read-only policy).
 */
const CLOUDFORMATION_READ_ONLY: PolicyDocument = {
  Version: '2012-10-17',
  Statement: [
    {
      Effect: 'Allow',
      Action: [
        'cloudformation:Describe*',
        'cloudformation:BatchDescribe*',
        'cloudformation:EstimateTemplateCost',
        'cloudformation:Get*',
        'cloudformation:List*',
        'cloudformation:ValidateTemplate',
        'cloudformation:Detect*',
      ],
      Resource: '*',
    },
  ],
}

export interface Identity {
  name: string
  arn: string
  policies: CompiledPolicies
}

export interface ReleasePath {
  releaseTemplate: Template
  releaseRole: Identity
  /** Production's plan role (prepares change sets); none in staging's account. */
  planRole: Identity | undefined
  deployRole: Identity
  filePublishingRole: Identity
  executionRole: Identity
  /** The documents of the release stack's managed policies, by name. */
  managedPolicies: Record<string, PolicyDocument>
}

/** The release stack of a stage, synthesized on its own (no bundling: it has no asset). */
export const releaseTemplate = (stage: StageName): Template => {
  const release = readReleaseConfig(settingsReader(settingsOf(RELEASE_SETTINGS)))
  if (!release) throw new Error('no release settings')
  // No CloudFormation rule check (a WASM engine): the app.ts synthesis runs it.
  const app = new App({ builtinCloudFormationValidation: false })
  const stack = new PetstoreReleaseStack(app, `petstore-release-${stage}`, {
    stage,
    release,
    env: { account: ACCOUNT, region: REGION },
  })
  return Template.fromStack(stack)
}

const paths = new Map<StageName, ReleasePath>()

export const releasePath = (stage: StageName): ReleasePath => {
  const known = paths.get(stage)
  if (known) return known
  const scope = scopeOf(stage)
  const template = releaseTemplate(stage)
  const stackName = `petstore-release-${stage}`
  const deployed = deployedStage(scope, { [stackName]: template })
  const managedPolicies: Record<string, PolicyDocument> = {}
  /** Each role's inline policies, by the role's name (what a policy's Roles refer to). */
  const inlinePolicies = new Map<string, PolicyDocument[]>()
  for (const resource of deployed.resources) {
    const properties = deployed.resolve(stackName, resource.properties) as Record<string, unknown>
    if (resource.type === 'AWS::IAM::ManagedPolicy') {
      managedPolicies[properties.ManagedPolicyName as string] =
        properties.PolicyDocument as PolicyDocument
    }
    if (resource.type === 'AWS::IAM::Policy') {
      for (const role of properties.Roles as string[]) {
        inlinePolicies.set(role, [
          ...(inlinePolicies.get(role) ?? []),
          properties.PolicyDocument as PolicyDocument,
        ])
      }
    }
  }
  /** A role of the release stack, by its logical id, with its own inline policies. */
  const releaseStackRole = (logicalId: RegExp, name: string): Identity | undefined => {
    const role = deployed.resources.find(
      (r) => r.type === 'AWS::IAM::Role' && logicalId.test(r.logicalId),
    )
    if (!role) return undefined
    return {
      name,
      arn: role.arn,
      policies: compilePolicies({ identityPolicies: inlinePolicies.get(role.ref) ?? [] }),
    }
  }
  const named = (name: string) => {
    const document = managedPolicies[name]
    if (!document) throw new Error(`the release stack makes no managed policy ${name}`)
    return document
  }
  const executionNames = Object.keys(managedPolicies)
    .filter((name) => name.startsWith(`petstore-${stage}-cfn-execution-`))
    .sort()
  const bootstrapBoundaryName = `petstore-${stage}-bootstrap-boundary`
  const bootstrap = {
    ...scope,
    qualifier: QUALIFIER,
    permissionsBoundary: bootstrapBoundaryName,
    applyBoundaryToAllRoles: true,
    executionPolicies: executionNames.map((name) => `arn:aws:iam::${ACCOUNT}:policy/${name}`),
  }
  const boundaryOf = (arn: string | undefined) => {
    if (!arn) return undefined
    return named(arn.split('/').at(-1) as string)
  }
  const bootstrapIdentity = (
    logicalId: 'DeploymentActionRole' | 'FilePublishingRole' | 'CloudFormationExecutionRole',
    roleName: string,
  ): Identity => {
    const role = bootstrapRole(bootstrap, logicalId)
    const managed = role.managed.map((arn) => {
      if (arn.endsWith(':policy/AWSCloudFormationReadOnlyAccess')) return CLOUDFORMATION_READ_ONLY
      return named(arn.split('/').at(-1) as string)
    })
    return {
      name: roleName,
      arn: `arn:aws:iam::${ACCOUNT}:role/cdk-${QUALIFIER}-${roleName}-${ACCOUNT}-${REGION}`,
      policies: compilePolicies({
        identityPolicies: [...role.inline, ...managed],
        permissionsBoundary: boundaryOf(role.boundary),
      }),
    }
  }
  const releaseRole = releaseStackRole(/^GitHubDeployRole(?!PlanRole)/, 'release role')
  if (!releaseRole) throw new Error(`the ${stackName} stack makes no deploy role`)
  const path: ReleasePath = {
    releaseTemplate: template,
    managedPolicies,
    releaseRole,
    planRole: releaseStackRole(/^GitHubDeployRolePlanRole/, 'plan role'),
    deployRole: bootstrapIdentity('DeploymentActionRole', 'deploy-role'),
    filePublishingRole: bootstrapIdentity('FilePublishingRole', 'file-publishing-role'),
    executionRole: bootstrapIdentity('CloudFormationExecutionRole', 'cfn-exec-role'),
  }
  paths.set(stage, path)
  return path
}
