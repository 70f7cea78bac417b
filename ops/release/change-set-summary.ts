/**
 * The approver's summary of a production plan: what CloudFormation's change sets would do, in
 * the order an approver must read it. Removals first (what is deleted, and whether CloudFormation
 * keeps it), then replacements (a new physical resource: a new table is an empty one), then IAM and
 * security changes, then the rest; what every release changes (new function bundles, the Lambda
 * versions and API deployment they bring) is one line, not a list of asset hashes.
 *
 * Fed by DescribeChangeSet's output (CloudFormation API Reference, "DescribeChangeSet",
 * "ResourceChange", "ResourceChangeDetail"), or by the same model made offline from two templates
 * (template-changes.ts) for the release dry run.
 */

/** The part of a ResourceChangeDetail the summary reads. */
export interface ChangeDetail {
  Target?: {
    Attribute?: string
    Name?: string
    RequiresRecreation?: 'Never' | 'Conditionally' | 'Always' | string
  }
  ChangeSource?: string
  CausingEntity?: string
  Evaluation?: string
}

/** The part of a ResourceChange the summary reads. */
export interface ResourceChange {
  Action?: 'Add' | 'Modify' | 'Remove' | 'Import' | 'Dynamic' | 'SyncWithActual' | string
  LogicalResourceId?: string
  PhysicalResourceId?: string
  ResourceType?: string
  Replacement?: 'True' | 'False' | 'Conditional' | string
  Scope?: string[]
  Details?: ChangeDetail[]
  PolicyAction?: string
}

/** The part of DescribeChangeSet's output the summary reads (one per stack). */
export interface ChangeSetDescription {
  StackName?: string
  StackId?: string
  ChangeSetName?: string
  ChangeSetId?: string
  Status?: string
  StatusReason?: string
  ExecutionStatus?: string
  CreationTime?: string | Date
  Changes?: { Type?: string; ResourceChange?: ResourceChange }[]
}

export type ChangeKind = 'removal' | 'replacement' | 'security' | 'change' | 'routine'

export interface ClassifiedChange {
  kind: ChangeKind
  stack: string
  logicalId: string
  type: string
  action: string
  /** The properties (or attributes) that change; for a replacement, those that cause it. */
  properties: string[]
  /** For a removal: what CloudFormation does with the resource (Delete, Retain, Snapshot). */
  policy?: string
}

/**
 * Resource types whose every change is an IAM or security change: who may do what, who may call
 * the API, what the WAF lets through, the secrets.
 */
const SECURITY_TYPES = [
  /^AWS::IAM::/,
  /^AWS::Lambda::Permission$/,
  /^AWS::SNS::TopicPolicy$/,
  /^AWS::WAFv2::/,
  /^AWS::SecretsManager::/,
  /^AWS::KMS::/,
  /^AWS::ApiGateway::(Authorizer|ApiKey|UsagePlanKey|Account)$/,
  /^AWS::EC2::SecurityGroup/,
]

/** Properties that are IAM or security on any type (a function's role, a method's authorizer). */
const SECURITY_PROPERTIES = new Set([
  'Role',
  'RoleArn',
  'ExecutionRoleArn',
  'ServiceRoleArn',
  'Policy',
  'PolicyDocument',
  'AssumeRolePolicyDocument',
  'ManagedPolicyArns',
  'PermissionsBoundary',
  'Policies',
  'AuthorizationType',
  'AuthorizerId',
  'ApiKeyRequired',
  'WebACLArn',
  'KmsKeyId',
  'KmsMasterKeyId',
  'SSESpecification',
  'Principal',
  'SourceArn',
  'EndpointConfiguration',
])

/**
 * What every release changes and no approver needs listed: a function's code (its bundle's
 * asset hash), the alias moved to the new version, the stage moved to the new deployment, and the
 * Lambda versions and API deployment themselves (their logical ids carry a hash, so each release
 * adds one and removes the last).
 */
const ROUTINE_TYPES = new Set(['AWS::Lambda::Version', 'AWS::ApiGateway::Deployment'])
const ROUTINE_PROPERTIES: Record<string, ReadonlySet<string>> = {
  'AWS::Lambda::Function': new Set(['Code']),
  'AWS::Lambda::Alias': new Set(['FunctionVersion']),
  'AWS::ApiGateway::Stage': new Set(['DeploymentId']),
  // The key sync's deploy-time run carries its code's hash, to run again when the code changes.
  'Custom::KeySync': new Set(['Code']),
}

/**
 * A resource's metadata (CDK's resource path, an asset's path): no change to anything in AWS.
 * A change only of it, or only caused by a routine resource (an alarm following the new Lambda
 * version: CloudFormation names the cause in CausingEntity, `LogicalId` or `LogicalId.Attribute`),
 * is routine too.
 */
const isMetadata = (detail: ChangeDetail) => detail.Target?.Attribute === 'Metadata'
const causedByRoutine = (detail: ChangeDetail, routineIds: ReadonlySet<string>) =>
  routineIds.has((detail.CausingEntity ?? '').split('.')[0] as string)

const propertiesOf = (change: ResourceChange): string[] => [
  ...new Set(
    (change.Details ?? [])
      .map((detail) =>
        detail.Target?.Attribute === 'Properties' || detail.Target?.Attribute === 'Tags'
          ? detail.Target.Name
          : detail.Target?.Attribute,
      )
      .filter((name): name is string => Boolean(name)),
  ),
]

const replacingProperties = (change: ResourceChange): string[] => [
  ...new Set(
    (change.Details ?? [])
      .filter((d) => d.Target?.RequiresRecreation && d.Target.RequiresRecreation !== 'Never')
      .map(
        (d) =>
          `${d.Target?.Name ?? d.Target?.Attribute}${d.Target?.RequiresRecreation === 'Conditionally' ? ' (maybe)' : ''}`,
      ),
  ),
]

/** Each resource change of a stack's change set, with the section it belongs in. */
export const classify = (description: ChangeSetDescription): ClassifiedChange[] => {
  const changes = (description.Changes ?? [])
    .map((change) => change.ResourceChange)
    .filter((change): change is ResourceChange => change !== undefined)
  const routineIds = new Set(
    changes
      .filter((c) => ROUTINE_TYPES.has(c.ResourceType ?? '') && c.Action === 'Add')
      .map((c) => c.LogicalResourceId ?? ''),
  )
  return changes.map((change) => {
    const type = change.ResourceType ?? 'unknown'
    const meaningful = (change.Details ?? []).filter((detail) => !isMetadata(detail))
    const base = {
      stack: description.StackName ?? 'unknown',
      logicalId: change.LogicalResourceId ?? 'unknown',
      type,
      action: change.Action ?? 'unknown',
      properties: propertiesOf({ ...change, Details: meaningful }),
    }
    if (type === 'AWS::CDK::Metadata') return { ...base, kind: 'routine' }
    const churn = ROUTINE_TYPES.has(type) && (change.Action === 'Add' || change.Action === 'Remove')
    if (churn) return { ...base, kind: 'routine' }
    if (change.Action === 'Remove') {
      return { ...base, kind: 'removal', policy: change.PolicyAction ?? 'Delete' }
    }
    if (
      change.Action === 'Modify' &&
      (change.Replacement === 'True' || change.Replacement === 'Conditional')
    ) {
      return { ...base, kind: 'replacement', properties: replacingProperties(change) }
    }
    const metadataOnly = (change.Details ?? []).length > 0 && meaningful.length === 0
    if (change.Action === 'Modify' && metadataOnly) {
      return { ...base, kind: 'routine', action: 'Metadata' }
    }
    // Before "follows": a policy that now names the new version is still shown as IAM.
    const security =
      SECURITY_TYPES.some((pattern) => pattern.test(type)) ||
      base.properties.some((property) => SECURITY_PROPERTIES.has(property))
    if (security) return { ...base, kind: 'security' }
    const followsOnly =
      meaningful.length > 0 && meaningful.every((detail) => causedByRoutine(detail, routineIds))
    if (change.Action === 'Modify' && followsOnly) {
      return { ...base, kind: 'routine', action: 'Follows' }
    }
    const routineProperties = ROUTINE_PROPERTIES[type]
    const routineOnly =
      change.Action === 'Modify' &&
      routineProperties !== undefined &&
      base.properties.length > 0 &&
      base.properties.every((property) => routineProperties.has(property))
    return { ...base, kind: routineOnly ? 'routine' : 'change' }
  }) as ClassifiedChange[]
}

/**
 * A change set CloudFormation made with nothing to do: it fails it with "didn't contain changes".
 * One that holds no resource change but was created (outputs or stack settings only) is executed.
 */
export const hasNoChanges = (description: ChangeSetDescription): boolean =>
  description.Status === 'FAILED' &&
  /didn't contain changes|No updates are to be performed/.test(description.StatusReason ?? '')

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')
const code = (text: string) => `\`${cell(text)}\``

const WHAT_A_REMOVAL_DOES: Record<string, string> = {
  Delete: 'deleted',
  Retain: 'removed from the stack, kept in the account (Retain)',
  Snapshot: 'deleted after a snapshot',
}

const table = (header: string[], rows: string[][]): string[] => [
  `| ${header.join(' | ')} |`,
  `|${header.map(() => '---').join('|')}|`,
  ...rows.map((row) => `| ${row.join(' | ')} |`),
]

const ROUTINE_WORDS: [string, string, string][] = [
  ['AWS::Lambda::Function', 'Modify', 'function(s) get new code (a new bundle)'],
  ['AWS::Lambda::Version', 'Add', 'Lambda version(s) published'],
  ['AWS::Lambda::Version', 'Remove', 'older Lambda version(s) leave the stack'],
  ['AWS::Lambda::Alias', 'Modify', 'alias(es) move to the new version'],
  ['AWS::ApiGateway::Deployment', 'Add', 'API deployment(s) made'],
  ['AWS::ApiGateway::Deployment', 'Remove', 'older API deployment(s) removed'],
  ['AWS::ApiGateway::Stage', 'Modify', 'stage(s) move to the new deployment'],
  ['AWS::CDK::Metadata', 'Modify', "CDK's own metadata"],
]

const routineLine = (routine: ClassifiedChange[]): string => {
  const said = ROUTINE_WORDS.map(([type, action, words]) => {
    const n = routine.filter((c) => c.type === type && c.action === action).length
    return n > 0 ? `${n} ${words}` : ''
  }).filter(Boolean)
  const follows = routine.filter((c) => c.action === 'Follows').length
  if (follows > 0)
    said.push(
      `${follows} resource(s) follow the new version or deployment (an alarm's dimension, a reference)`,
    )
  const metadata = routine.filter((c) => c.action === 'Metadata').length
  if (metadata > 0) said.push(`${metadata} resource(s) change only their metadata`)
  return said.length === 0 ? 'Nothing.' : `${said.join('; ')}.`
}

export interface PlanSummaryInput {
  /** What is being planned, e.g. "production, release run 123". */
  title: string
  changeSets: ChangeSetDescription[]
  /** Lines said after the changes (how the plan is applied, by whom). */
  footer?: string[]
}

/** The approver's summary, as Markdown (GitHub's job summary renders it). */
export const renderPlanSummary = ({ title, changeSets, footer = [] }: PlanSummaryInput): string => {
  const changes = changeSets.flatMap(classify)
  const of = (kind: ChangeKind) => changes.filter((c) => c.kind === kind)
  const lines: string[] = [`## Plan: ${cell(title)}`, '']
  lines.push(
    ...table(
      ['stack', 'change set', 'status', 'resource changes'],
      changeSets.map((set) => [
        code(set.StackName ?? 'unknown'),
        code(set.ChangeSetName ?? set.ChangeSetId ?? 'offline'),
        hasNoChanges(set)
          ? 'no changes'
          : cell(`${set.Status ?? '?'} / ${set.ExecutionStatus ?? '?'}`),
        String(classify(set).length),
      ]),
    ),
    '',
  )
  const removals = of('removal')
  lines.push(`### Removals (${removals.length})`, '')
  if (removals.length > 0) {
    lines.push(
      ...table(
        ['stack', 'resource', 'type', 'what happens'],
        removals.map((c) => [
          code(c.stack),
          code(c.logicalId),
          code(c.type),
          WHAT_A_REMOVAL_DOES[c.policy ?? 'Delete'] ?? cell(c.policy ?? ''),
        ]),
      ),
      '',
    )
  } else lines.push('None.', '')
  const replacements = of('replacement')
  lines.push(`### Replacements (${replacements.length})`, '')
  if (replacements.length > 0) {
    lines.push(
      'CloudFormation makes a new resource and deletes the old one (a replaced table starts empty).',
      '',
      ...table(
        ['stack', 'resource', 'type', 'replaced because of'],
        replacements.map((c) => [
          code(c.stack),
          code(c.logicalId),
          code(c.type),
          cell(c.properties.join(', ') || 'unknown'),
        ]),
      ),
      '',
    )
  } else lines.push('None.', '')
  const security = of('security')
  lines.push(`### IAM and security changes (${security.length})`, '')
  if (security.length > 0) {
    lines.push(
      ...table(
        ['stack', 'resource', 'type', 'action', 'what changes'],
        security.map((c) => [
          code(c.stack),
          code(c.logicalId),
          code(c.type),
          c.action,
          cell(c.properties.join(', ') || (c.action === 'Add' ? 'new' : 'unknown')),
        ]),
      ),
      '',
    )
  } else lines.push('None.', '')
  const other = of('change')
  lines.push(`### Other changes (${other.length})`, '')
  if (other.length > 0) {
    lines.push(
      ...table(
        ['stack', 'resource', 'type', 'action', 'what changes'],
        other.map((c) => [
          code(c.stack),
          code(c.logicalId),
          code(c.type),
          c.action,
          cell(c.properties.join(', ') || (c.action === 'Add' ? 'new' : '')),
        ]),
      ),
      '',
    )
  } else lines.push('None.', '')
  lines.push(`### Every release (${of('routine').length})`, '', routineLine(of('routine')), '')
  return [...lines, ...footer].join('\n').replace(/\n*$/, '\n')
}
