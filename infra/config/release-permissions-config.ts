/**
 * The least-privilege bootstrap's names, the permissions boundary of the stage roles and the
 * boundary of the bootstrap roles (docs/release-permissions.md). The execution policy itself, one
 * entry per resource type, is execution-permissions-config.ts.
 */
import { roleBoundaryName } from '#shared/config/role-boundary-config.ts'

/** Where a policy applies: literal values in tests, CloudFormation pseudo parameters in the stack. */
export interface PermissionScope {
  partition: string
  region: string
  account: string
  stage: string
}

export interface ExecutionStatement {
  sid?: string
  /** Allow unless it says Deny. */
  effect?: 'Allow' | 'Deny'
  actions: readonly string[]
  /** Instead of `actions`: every action but these. */
  notActions?: readonly string[]
  resources: readonly string[]
  /** An IAM Condition block, as a policy document writes it. */
  condition?: Record<string, Record<string, string | readonly string[]>>
}

export interface ResourceTypePermissions {
  /** Why the entry reaches as far as it does, when a resource cannot be named. */
  note?: string
  statements(scope: PermissionScope): ExecutionStatement[]
}

/** The path of every IAM role a stage's stacks create: what the execution policy's IAM rights name. */
export const stageRolePath = (stage: string): string => `/petstore-${stage}/`

/** The stage's roles, as ARN pattern: every role its stacks create. */
export const stageRoles = (s: PermissionScope): string =>
  `arn:${s.partition}:iam::${s.account}:role${stageRolePath(s.stage)}*`
/** The stage roles' boundary, as the execution policy requires it. */
export const roleBoundaryArn = (s: PermissionScope): string =>
  `arn:${s.partition}:iam::${s.account}:policy/${roleBoundaryName(s.stage)}`

/** The managed policies the release stack of a stage creates. */
export const executionPolicyName = (stage: string): string => `petstore-${stage}-cfn-execution`
export const bootstrapBoundaryName = (stage: string): string =>
  `petstore-${stage}-bootstrap-boundary`

/**
 * The boundary of every role the bootstrap stack makes (`cdk bootstrap
 * --custom-permissions-boundary … --apply-permissions-boundary-to-all-roles`): the deploy role
 * the release role assumes, the file-publishing role and the CloudFormation execution role. It
 * takes nothing the bootstrap's own policies and the execution policy give, but for these
 * explicit denies, which no policy of the release path can outweigh. The same for every stage.
 */
export const bootstrapBoundaryStatements = (
  s: Omit<PermissionScope, 'stage' | 'region'>,
): ExecutionStatement[] => {
  const stacks = (names: string[]) =>
    names.map((name) => `arn:${s.partition}:cloudformation:*:${s.account}:stack/${name}/*`)
  const iam = (resource: string) => `arn:${s.partition}:iam::${s.account}:${resource}`
  return [
    { sid: 'WithinTheDenies', effect: 'Allow', actions: ['*'], resources: ['*'] },
    {
      sid: 'NoChangeToReleaseOrBootstrapStacks',
      effect: 'Deny',
      actions: [
        'cloudformation:Create*',
        'cloudformation:Update*',
        'cloudformation:Delete*',
        'cloudformation:Execute*',
        'cloudformation:Set*',
        'cloudformation:Rollback*',
        'cloudformation:ContinueUpdateRollback',
        'cloudformation:CancelUpdateStack',
        'cloudformation:Import*',
        'cloudformation:Signal*',
      ],
      resources: stacks(['petstore-release-*', 'CDKToolkit*']),
    },
    {
      sid: 'ProductionStacksStayProtected',
      effect: 'Deny',
      actions: ['cloudformation:DeleteStack', 'cloudformation:UpdateTerminationProtection'],
      resources: stacks(['petstore-production-*']),
    },
    {
      sid: 'NoChangeToReleaseAccess',
      effect: 'Deny',
      actions: [],
      notActions: ['iam:Get*', 'iam:List*', 'iam:PassRole', 'iam:Simulate*'],
      resources: [
        iam('role/petstore-*-release-*'),
        iam('role/petstore-*-plan-*'),
        iam('role/petstore-release-*'),
        iam('role/cdk-*'),
        iam('policy/petstore-*-cfn-execution-*'),
        iam('policy/petstore-*-role-boundary'),
        iam('policy/petstore-*-bootstrap-boundary'),
        iam('oidc-provider/*'),
      ],
    },
    {
      sid: 'NoUsersGroupsOrKeys',
      effect: 'Deny',
      actions: [],
      notActions: ['iam:Get*', 'iam:List*'],
      resources: [iam('user/*'), iam('group/*')],
    },
    {
      sid: 'RolesCarryTheStageBoundary',
      effect: 'Deny',
      actions: ['iam:CreateRole', 'iam:PutRolePermissionsBoundary'],
      resources: ['*'],
      condition: {
        StringNotLike: {
          'iam:PermissionsBoundary': `arn:${s.partition}:iam::${s.account}:policy/petstore-*-role-boundary`,
        },
      },
    },
    {
      sid: 'BoundariesStay',
      effect: 'Deny',
      actions: ['iam:DeleteRolePermissionsBoundary', 'iam:DeleteUserPermissionsBoundary'],
      resources: ['*'],
    },
    {
      sid: 'NoAdministratorAccess',
      effect: 'Deny',
      actions: ['iam:AttachRolePolicy', 'iam:AttachUserPolicy', 'iam:AttachGroupPolicy'],
      resources: ['*'],
      condition: {
        ArnLike: {
          'iam:PolicyARN': [
            `arn:${s.partition}:iam::aws:policy/AdministratorAccess`,
            `arn:${s.partition}:iam::aws:policy/PowerUserAccess`,
            `arn:${s.partition}:iam::aws:policy/IAMFullAccess`,
          ],
        },
      },
    },
  ]
}

export interface PolicyDocumentJson {
  Version: '2012-10-17'
  Statement: Record<string, unknown>[]
}

const statementJson = (statement: ExecutionStatement): Record<string, unknown> => ({
  ...(statement.sid ? { Sid: statement.sid } : {}),
  Effect: statement.effect ?? 'Allow',
  ...(statement.notActions
    ? { NotAction: [...statement.notActions] }
    : { Action: [...statement.actions] }),
  Resource: [...statement.resources],
  ...(statement.condition ? { Condition: statement.condition } : {}),
})

/** Statements of the same resources and condition as one, their actions sorted and unique. */
const merged = (statements: ExecutionStatement[]): ExecutionStatement[] => {
  const byTarget = new Map<string, ExecutionStatement>()
  for (const statement of statements) {
    const key = JSON.stringify([
      statement.effect,
      [...statement.resources].sort(),
      statement.condition,
    ])
    const seen = byTarget.get(key)
    byTarget.set(key, {
      ...statement,
      resources: [...statement.resources].sort(),
      actions: [...new Set([...(seen?.actions ?? []), ...statement.actions])].sort(),
    })
  }
  return [...byTarget.values()]
}

/** IAM's size limit of a managed policy, 6,144 characters without whitespace (IAM quotas), less a margin. */
const MANAGED_POLICY_CHARACTERS = 6000

/** The longest partition, Region and account a scope can have: a split that fits these fits all. */
const WIDEST: PermissionScope = {
  partition: 'aws-iso-b',
  region: 'ap-southeast-5',
  account: '000000000000',
  stage: 'production',
}

/**
 * The execution policy (a table of entries: execution-permissions-config.ts) as managed policy
 * documents, the statements of every entry merged and
 * split so each fits IAM's size limit (the stack attaches them all; `cdk bootstrap` names each).
 */
export const executionPolicyDocuments = (
  scope: PermissionScope,
  table: Record<string, ResourceTypePermissions>,
): PolicyDocumentJson[] => {
  const statements = (s: PermissionScope) =>
    merged(Object.values(table).flatMap((entry) => entry.statements(s)))
  const widest = statements({ ...WIDEST, stage: scope.stage.padEnd(WIDEST.stage.length, 'x') })
  const real = statements(scope)
  const documents: PolicyDocumentJson[] = []
  let size = Number.POSITIVE_INFINITY
  widest.forEach((statement, index) => {
    const length = JSON.stringify(statementJson(statement)).length + 1
    if (size + length > MANAGED_POLICY_CHARACTERS) {
      documents.push({ Version: '2012-10-17', Statement: [] })
      size = 40
    }
    documents.at(-1)?.Statement.push(statementJson(real[index] as ExecutionStatement))
    size += length
  })
  return documents
}

/** The bootstrap roles' boundary as a policy document. */
export const bootstrapBoundaryDocument = (
  scope: Omit<PermissionScope, 'stage' | 'region'>,
): PolicyDocumentJson => ({
  Version: '2012-10-17',
  Statement: bootstrapBoundaryStatements(scope).map(statementJson),
})
