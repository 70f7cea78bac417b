import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { parse } from 'yaml'
import type { PolicyDocument } from '#local/iam/iam-policy-evaluator.ts'

/**
 * The CDK bootstrap template of the CLI this project pins (`aws-cdk` in package.json): what
 * `cdk bootstrap` deploys. Its roles' policies, resolved for one account, Region and qualifier,
 * are what the release role reaches through the deploy role, so the escalation table evaluates
 * them as they are, not as a copy: a CLI upgrade that changes them changes the table.
 */
const require = createRequire(import.meta.url)
const TEMPLATE_FILE = join(
  require.resolve('aws-cdk/package.json'),
  '..',
  'lib/api/bootstrap/bootstrap-template.yaml',
)

// biome-ignore lint/suspicious/noExplicitAny: a parsed CloudFormation template
type Json = any

export const bootstrapTemplate = (): Json => parse(readFileSync(TEMPLATE_FILE, 'utf8'))

export interface BootstrapScope {
  partition: string
  region: string
  account: string
  qualifier: string
  /** The `--custom-permissions-boundary` name, if any. */
  permissionsBoundary?: string
  applyBoundaryToAllRoles?: boolean
  executionPolicies?: string[]
}

/** The template's conditions as `cdk bootstrap` with these settings makes them. */
const conditions = (scope: BootstrapScope): Record<string, boolean> => ({
  HasTrustedAccounts: false,
  HasTrustedAccountsForLookup: false,
  HasCloudFormationExecutionPolicies: (scope.executionPolicies ?? []).length > 0,
  HasCustomFileAssetsBucketName: false,
  CreateNewKey: false,
  UseAwsManagedKey: true,
  ShouldCreatePermissionsBoundary: false,
  PermissionsBoundarySet: scope.permissionsBoundary !== undefined,
  ShouldApplyPermissionsBoundaryToAllRoles:
    scope.permissionsBoundary !== undefined && scope.applyBoundaryToAllRoles === true,
  HasCustomContainerAssetsRepositoryName: false,
  UsePublicAccessBlockConfiguration: true,
  ShouldDenyExternalId: true,
})

/** A resolver of template values (Fn::Sub, Fn::If, Ref) for the scope. */
const resolver = (scope: BootstrapScope): ((value: Json) => Json) => {
  const when = conditions(scope)
  const roleArn = (name: string) =>
    `arn:${scope.partition}:iam::${scope.account}:role/cdk-${scope.qualifier}-${name}-${scope.account}-${scope.region}`
  const bucket = `cdk-${scope.qualifier}-assets-${scope.account}-${scope.region}`
  const values: Record<string, unknown> = {
    'AWS::Partition': scope.partition,
    'AWS::Region': scope.region,
    'AWS::AccountId': scope.account,
    'AWS::NoValue': undefined,
    Qualifier: scope.qualifier,
    InputPermissionsBoundary: scope.permissionsBoundary ?? '',
    CloudFormationExecutionPolicies: scope.executionPolicies ?? [],
    TrustedAccounts: [],
    FileAssetsBucketKmsKeyId: 'AWS_MANAGED_KEY',
    CdkBootstrapVersion: `/cdk-bootstrap/${scope.qualifier}/version`,
    'CloudFormationExecutionRole.Arn': roleArn('cfn-exec-role'),
    'FilePublishingRole.Arn': roleArn('file-publishing-role'),
    'StagingBucket.Arn': `arn:${scope.partition}:s3:::${bucket}`,
    StagingBucket: bucket,
  }
  const resolve = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(resolve).filter((item) => item !== undefined)
    if (value === null || typeof value !== 'object') return value
    const keys = Object.keys(value)
    if (keys.length === 1) {
      const [key] = keys as [string]
      const argument = value[key]
      if (key === 'Ref') return values[argument]
      if (key === 'Fn::Sub') {
        return (argument as string).replace(/\$\{([^}]+)\}/g, (_m, name: string) => {
          if (!(name in values)) throw new Error(`bootstrap template: no value for ${name}`)
          return String(values[name])
        })
      }
      if (key === 'Fn::If') {
        const [condition, yes, no] = argument as [string, Json, Json]
        if (!(condition in when)) throw new Error(`bootstrap template: no condition ${condition}`)
        return resolve(when[condition] ? yes : no)
      }
    }
    return Object.fromEntries(
      Object.entries(value)
        .map(([k, v]) => [k, resolve(v)])
        .filter(([, v]) => v !== undefined),
    )
  }
  return resolve
}

/** A bootstrap role's policies (inline and attached by Ref), managed policy ARNs and boundary. */
export const bootstrapRole = (
  scope: BootstrapScope,
  logicalId: 'DeploymentActionRole' | 'FilePublishingRole' | 'CloudFormationExecutionRole',
): { inline: PolicyDocument[]; managed: string[]; boundary: string | undefined } => {
  const raw = bootstrapTemplate()
  const resolve = resolver(scope)
  const role = resolve(raw.Resources[logicalId].Properties)
  const attached = Object.values(raw.Resources as Record<string, Json>)
    .filter(
      (resource) =>
        resource.Type === 'AWS::IAM::Policy' &&
        (resource.Properties.Roles as Json[]).some((r) => r?.Ref === logicalId),
    )
    .map((resource) => resolve(resource.Properties.PolicyDocument))
  return {
    inline: [...((role.Policies ?? []) as Json[]).map((p) => p.PolicyDocument), ...attached],
    managed: (role.ManagedPolicyArns ?? []) as string[],
    boundary: role.PermissionsBoundary,
  }
}
