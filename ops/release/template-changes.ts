/**
 * A stack's change set made offline: two templates (as deployed, as planned) compared resource by
 * resource into the model CloudFormation's DescribeChangeSet returns, so the release dry run
 * prints the approver's summary (change-set-summary.ts) with no AWS account. Static only: it
 * sees what the templates say, not what a reference resolves to at deploy time (CloudFormation's
 * "Dynamic" evaluations), and whether a property replaces its resource comes from a rule (the CDK
 * CLI's own resource specification: replacement-rules.ts).
 */
import type { ChangeDetail, ChangeSetDescription, ResourceChange } from './change-set-summary.ts'

interface TemplateResource {
  Type: string
  Properties?: Record<string, unknown>
  DeletionPolicy?: string
  UpdateReplacePolicy?: string
  [attribute: string]: unknown
}

export interface StackTemplate {
  Resources?: Record<string, TemplateResource>
}

/** Whether changing a property of a resource type replaces it: 'yes', 'maybe' or 'no'. */
export type ReplacementRule = (type: string, property: string) => 'yes' | 'maybe' | 'no'

/** The attributes of a resource besides its properties that a change set reports as its scope. */
const ATTRIBUTES = [
  'Metadata',
  'CreationPolicy',
  'UpdatePolicy',
  'DeletionPolicy',
  'UpdateReplacePolicy',
] as const

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

const RECREATION = { yes: 'Always', maybe: 'Conditionally', no: 'Never' } as const

/** What CloudFormation does with a resource it removes (its DeletionPolicy). */
const removalPolicy = (resource: TemplateResource): string =>
  resource.DeletionPolicy === 'Retain' || resource.DeletionPolicy === 'RetainExceptOnCreate'
    ? 'Retain'
    : resource.DeletionPolicy === 'Snapshot'
      ? 'Snapshot'
      : 'Delete'

const modification = (
  logicalId: string,
  before: TemplateResource,
  after: TemplateResource,
  replaces: ReplacementRule,
): ResourceChange | undefined => {
  const details: ChangeDetail[] = []
  const scope = new Set<string>()
  const names = new Set([
    ...Object.keys(before.Properties ?? {}),
    ...Object.keys(after.Properties ?? {}),
  ])
  for (const name of [...names].sort()) {
    if (same(before.Properties?.[name], after.Properties?.[name])) continue
    const attribute = name === 'Tags' ? 'Tags' : 'Properties'
    scope.add(attribute)
    details.push({
      Target: {
        Attribute: attribute,
        Name: name,
        RequiresRecreation: RECREATION[replaces(after.Type, name)],
      },
      Evaluation: 'Static',
      ChangeSource: 'DirectModification',
    })
  }
  for (const attribute of ATTRIBUTES) {
    if (same(before[attribute], after[attribute])) continue
    scope.add(attribute)
    details.push({
      Target: { Attribute: attribute, RequiresRecreation: 'Never' },
      Evaluation: 'Static',
      ChangeSource: 'DirectModification',
    })
  }
  if (details.length === 0) return undefined
  const recreation = details.map((detail) => detail.Target?.RequiresRecreation)
  return {
    Action: 'Modify',
    LogicalResourceId: logicalId,
    ResourceType: after.Type,
    Replacement: recreation.includes('Always')
      ? 'True'
      : recreation.includes('Conditionally')
        ? 'Conditional'
        : 'False',
    Scope: [...scope],
    Details: details,
  }
}

/**
 * The change set that would take `stackName` from `deployed` (undefined: the stack does not exist
 * yet) to `planned`, as DescribeChangeSet would describe it.
 */
export const templateChanges = (
  stackName: string,
  deployed: StackTemplate | undefined,
  planned: StackTemplate,
  replaces: ReplacementRule,
): ChangeSetDescription => {
  const before = deployed?.Resources ?? {}
  const after = planned.Resources ?? {}
  const changes: ResourceChange[] = []
  for (const [logicalId, resource] of Object.entries(after)) {
    const old = before[logicalId]
    if (!old) {
      changes.push({ Action: 'Add', LogicalResourceId: logicalId, ResourceType: resource.Type })
    } else if (old.Type !== resource.Type) {
      // CloudFormation refuses to change a resource's type in place: it is a new resource.
      changes.push({
        Action: 'Remove',
        LogicalResourceId: logicalId,
        ResourceType: old.Type,
        PolicyAction: removalPolicy(old),
      })
      changes.push({ Action: 'Add', LogicalResourceId: logicalId, ResourceType: resource.Type })
    } else {
      const modified = modification(logicalId, old, resource, replaces)
      if (modified) changes.push(modified)
    }
  }
  for (const [logicalId, old] of Object.entries(before)) {
    if (logicalId in after) continue
    changes.push({
      Action: 'Remove',
      LogicalResourceId: logicalId,
      ResourceType: old.Type,
      PolicyAction: removalPolicy(old),
    })
  }
  return {
    StackName: stackName,
    ChangeSetName: 'offline',
    Status: changes.length > 0 ? 'CREATE_COMPLETE' : 'FAILED',
    StatusReason:
      changes.length > 0
        ? 'made offline from two templates'
        : "The submitted information didn't contain changes.",
    ExecutionStatus: changes.length > 0 ? 'AVAILABLE' : 'UNAVAILABLE',
    Changes: changes.map((change) => ({ Type: 'Resource', ResourceChange: change })),
  }
}
