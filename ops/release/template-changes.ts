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

/** The resources a change set adds, and those it adds or removes. */
interface Churn {
  added: ReadonlySet<string>
  churned: ReadonlySet<string>
}

/** `{Ref: id}` → `id`, `{'Fn::GetAtt': [id, attribute]}` → `id.attribute`; anything else: undefined. */
const referenceOf = (value: unknown): { entity: string; source: string } | undefined => {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined
  const keys = Object.keys(value)
  if (keys.length !== 1) return undefined
  const ref = (value as Record<string, unknown>).Ref
  if (typeof ref === 'string') return { entity: ref, source: 'ResourceReference' }
  const getAtt = (value as Record<string, unknown>)['Fn::GetAtt']
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') {
    return { entity: getAtt.join('.'), source: 'ResourceAttribute' }
  }
  return undefined
}

/**
 * Each reference in `value` to a resource of `churned` (one this change set adds or removes),
 * and the value with those references blanked: two values equal once blanked differ only in
 * which of those resources they name.
 */
const blankReferences = (
  value: unknown,
  churned: ReadonlySet<string>,
  found: { entity: string; source: string }[],
): unknown => {
  const reference = referenceOf(value)
  if (reference && churned.has(reference.entity.split('.')[0] as string)) {
    found.push(reference)
    return '<reference>'
  }
  if (Array.isArray(value)) return value.map((item) => blankReferences(item, churned, found))
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, blankReferences(item, churned, found)]),
    )
  }
  return value
}

/**
 * How a property's change is reported: made by the template itself (DirectModification), or only
 * because it names a resource this change set adds in place of another (a new Lambda version: a
 * reference to it, with CausingEntity `LogicalId` or `LogicalId.Attribute`, as DescribeChangeSet
 * names the entity that triggered a change).
 */
const sources = (
  before: unknown,
  after: unknown,
  churn: Churn,
): Pick<ChangeDetail, 'ChangeSource' | 'CausingEntity'>[] => {
  const referenced: { entity: string; source: string }[] = []
  const blankBefore = blankReferences(before, churn.churned, [])
  const blankAfter = blankReferences(after, churn.churned, referenced)
  const causes = referenced.filter((r) => churn.added.has(r.entity.split('.')[0] as string))
  if (!same(blankBefore, blankAfter) || causes.length === 0) {
    return [{ ChangeSource: 'DirectModification' }]
  }
  const unique = new Map(causes.map((cause) => [cause.entity, cause]))
  return [...unique.values()].map((cause) => ({
    ChangeSource: cause.source,
    CausingEntity: cause.entity,
  }))
}

const modification = (
  logicalId: string,
  [before, after]: [TemplateResource, TemplateResource],
  replaces: ReplacementRule,
  churn: Churn,
): ResourceChange | undefined => {
  const details: ChangeDetail[] = []
  const scope = new Set<string>()
  const names = new Set([
    ...Object.keys(before.Properties ?? {}),
    ...Object.keys(after.Properties ?? {}),
  ])
  for (const name of [...names].sort()) {
    const [was, is] = [before.Properties?.[name], after.Properties?.[name]]
    if (same(was, is)) continue
    const attribute = name === 'Tags' ? 'Tags' : 'Properties'
    scope.add(attribute)
    for (const source of sources(was, is, churn)) {
      details.push({
        Target: {
          Attribute: attribute,
          Name: name,
          RequiresRecreation: RECREATION[replaces(after.Type, name)],
        },
        Evaluation: 'Static',
        ...source,
      })
    }
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
  const added = new Set(Object.keys(after).filter((id) => !(id in before)))
  const churned = new Set([...added, ...Object.keys(before).filter((id) => !(id in after))])
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
      const modified = modification(logicalId, [old, resource], replaces, { churned, added })
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
