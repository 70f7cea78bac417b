import type { PolicyDocument, PolicySet } from '#local/iam/iam-policy-evaluator.ts'
import { roleBoundaryDocument, roleBoundaryName } from '#shared/config/role-boundary-config.ts'
import type { SynthesizedStage, Template } from './synthesized-stage.ts'

// Each function's role as the stage's templates give it, resolved against the local stage.

/** The local stage the templates are resolved against. */
export interface LocalStage {
  region: string
  account: string
  /**
   * The local value of each variable a function may get (local-environment.ts): a table's name,
   * the cursor secret. A template variable CloudFormation resolves at deploy time (an imported
   * table name, a secret's dynamic reference) takes the local value of the same name.
   */
  variables: Record<string, string>
}

/** What a function's template gives it: its role's policies and the variables it is given. */
export interface FunctionRole {
  /** POWERTOOLS_SERVICE_NAME: the operation id, `authorizer` or `key-sync`. */
  service: string
  /** The role's name as the template names it (its logical id). */
  roleName: string
  policies: PolicySet
  /** Every variable the template sets for the function. */
  variables: readonly string[]
  /** Policies the template names but does not hold (an AWS managed policy), which go unenforced. */
  unresolved: readonly string[]
}

type Resource = Template['Resources'][string]

const UNRESOLVED = 'unresolved:'

/**
 * CloudFormation's intrinsic functions as far as the stage's IAM uses them: pseudo parameters,
 * `Ref` and `Fn::GetAtt` of the tables (through the data stack's exports, `Fn::ImportValue`) and
 * of the cursor secret, `Fn::Join` and `Fn::Sub` of those. What else a policy names (its own log
 * group, the REST API) resolves to a mark no DynamoDB request's resource can match.
 */
class TemplateResolver {
  readonly #stage: SynthesizedStage
  readonly #local: LocalStage
  /** Data-stack table logical id -> local table name. */
  readonly #tables = new Map<string, string>()

  constructor(stage: SynthesizedStage, local: LocalStage) {
    this.#stage = stage
    this.#local = local
    // A table's local name is the local value of a variable that carries its name.
    for (const resource of Object.values(stage.api.Resources)) {
      const variables = environmentOf(resource)
      for (const [name, value] of Object.entries(variables)) {
        // The data stack's tables through its exports; the API stack's own (the automatic
        // block's) by a plain Ref.
        const table = this.#importedRef(value) ?? this.#ownTableRef(value)
        const localName = local.variables[name]
        if (table && localName) this.#tables.set(table, localName)
      }
    }
  }

  /** The data stack's resource an api-stack value imports by `Ref`, if it is one. */
  #importedRef(value: unknown): string | undefined {
    const exported = this.#exportOf(value)
    const ref = (exported as { Ref?: unknown } | undefined)?.Ref
    return typeof ref === 'string' ? ref : undefined
  }

  /** The API stack's own table a value names by `Ref`, if it is one. */
  #ownTableRef(value: unknown): string | undefined {
    const ref = (value as { Ref?: unknown } | null)?.Ref
    return typeof ref === 'string' &&
      this.#stage.api.Resources[ref]?.Type === 'AWS::DynamoDB::Table'
      ? ref
      : undefined
  }

  #exportOf(value: unknown): unknown {
    const name = (value as { 'Fn::ImportValue'?: unknown } | null)?.['Fn::ImportValue']
    if (typeof name !== 'string') return undefined
    const output = Object.values(this.#stage.data.Outputs ?? {}).find(
      (candidate) => candidate.Export?.Name === name,
    )
    return output?.Value
  }

  #pseudo(name: string): string | undefined {
    return {
      'AWS::Region': this.#local.region,
      'AWS::AccountId': this.#local.account,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
    }[name]
  }

  #ref(id: string, template: Template): string {
    const pseudo = this.#pseudo(id)
    if (pseudo) return pseudo
    const table = this.#tables.get(id)
    if (table) return table
    const type = template.Resources[id]?.Type
    if (type === 'AWS::SecretsManager::Secret') {
      return `arn:aws:secretsmanager:${this.#local.region}:${this.#local.account}:secret:${id}`
    }
    return `${UNRESOLVED}${id}`
  }

  #getAtt(id: string, attribute: string): string {
    const table = this.#tables.get(id)
    if (table && attribute === 'Arn') {
      return `arn:aws:dynamodb:${this.#local.region}:${this.#local.account}:table/${table}`
    }
    return `${UNRESOLVED}${id}.${attribute}`
  }

  /** A value as CloudFormation would deploy it locally (strings and lists of strings). */
  resolve(value: unknown, template: Template = this.#stage.api): unknown {
    if (Array.isArray(value)) return value.map((item) => this.resolve(item, template))
    if (typeof value !== 'object' || value === null) return value
    const entries = Object.entries(value)
    const [key, argument] = entries[0] ?? []
    if (entries.length === 1 && key === 'Ref' && typeof argument === 'string') {
      return this.#ref(argument, template)
    }
    if (entries.length === 1 && key === 'Fn::GetAtt') {
      const [id, attribute] = argument as [string, string]
      return this.#getAtt(id, attribute)
    }
    if (entries.length === 1 && key === 'Fn::ImportValue') {
      return this.resolve(this.#exportOf(value), this.#stage.data)
    }
    if (entries.length === 1 && key === 'Fn::Join') {
      const [separator, parts] = argument as [string, unknown[]]
      return (this.resolve(parts, template) as unknown[]).join(separator)
    }
    if (entries.length === 1 && key === 'Fn::Sub' && typeof argument === 'string') {
      return argument.replace(/\$\{([^}]+)\}/g, (_, name: string) =>
        name.includes('.')
          ? this.#getAtt(name.split('.')[0] as string, name.split('.')[1] as string)
          : this.#ref(name, template),
      )
    }
    return Object.fromEntries(entries.map(([name, item]) => [name, this.resolve(item, template)]))
  }
}

const environmentOf = (resource: Resource): Record<string, unknown> =>
  ((resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
    ?.Variables ?? {}) as Record<string, unknown>

const refOf = (value: unknown): string | undefined => {
  const ref = (value as { Ref?: unknown } | null)?.Ref
  return typeof ref === 'string' ? ref : undefined
}

/**
 * Every function of the stage's API stack that names its service, with its role's policies as
 * IAM will evaluate them: the role's inline policies, the AWS::IAM::Policy resources attached to
 * it, managed policies and the permissions boundary where the template holds them.
 */
export const stageRoles = (
  stage: SynthesizedStage,
  local: LocalStage,
): Map<string, FunctionRole> => {
  const resolver = new TemplateResolver(stage, local)
  const resources = stage.api.Resources
  const documentOf = (value: unknown) => resolver.resolve(value) as PolicyDocument
  /**
   * A managed policy's document when the template makes it or it is the stage roles' boundary
   * (the release stack makes that one from the same definition), else its name for `unresolved`.
   */
  const managed = (arn: unknown): PolicyDocument | string => {
    const id = refOf(arn)
    const policy = id ? resources[id] : undefined
    if (policy?.Type === 'AWS::IAM::ManagedPolicy') {
      return documentOf(policy.Properties?.PolicyDocument)
    }
    const resolved = resolver.resolve(arn)
    if (
      typeof resolved === 'string' &&
      resolved.endsWith(`:policy/${roleBoundaryName(stage.stage)}`)
    ) {
      return roleBoundaryDocument()
    }
    return JSON.stringify(resolved)
  }
  const roles = new Map<string, FunctionRole>()
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue
    const variables = environmentOf(resource)
    const service = variables.POWERTOOLS_SERVICE_NAME
    const roleId = (resource.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.[
      'Fn::GetAtt'
    ]?.[0]
    if (typeof service !== 'string' || !roleId) continue
    const role = resources[roleId]?.Properties ?? {}
    const attached = Object.values(resources)
      .filter(
        (candidate) =>
          candidate.Type === 'AWS::IAM::Policy' &&
          ((candidate.Properties?.Roles ?? []) as unknown[]).some((ref) => refOf(ref) === roleId),
      )
      .map((policy) => documentOf(policy.Properties?.PolicyDocument))
    const inline = ((role.Policies ?? []) as { PolicyDocument: unknown }[]).map((policy) =>
      documentOf(policy.PolicyDocument),
    )
    const managedPolicies = ((role.ManagedPolicyArns ?? []) as unknown[]).map(managed)
    const boundary =
      role.PermissionsBoundary === undefined ? undefined : managed(role.PermissionsBoundary)
    const unresolved = [...managedPolicies, ...(boundary === undefined ? [] : [boundary])].filter(
      (policy): policy is string => typeof policy === 'string',
    )
    roles.set(service, {
      service,
      roleName: roleId,
      policies: {
        identityPolicies: [
          ...inline,
          ...attached,
          ...managedPolicies.filter(
            (policy): policy is PolicyDocument => typeof policy !== 'string',
          ),
        ],
        permissionsBoundary: typeof boundary === 'string' ? undefined : boundary,
      },
      variables: Object.keys(variables),
      unresolved,
    })
  }
  return roles
}
