/**
 * An IAM policy evaluator for requests within one account, written from AWS's documented
 * evaluation logic (IAM User Guide: "Policy evaluation logic", "Policy evaluation for requests
 * within a single account", "How AWS enforcement code logic evaluates requests to allow or deny
 * access", "Permissions boundaries for IAM entities"):
 *
 * 1. An explicit Deny in any policy that applies (identity-based, the permissions boundary, the
 *    resource-based policy) decides: `explicit-deny`.
 * 2. Otherwise the request is allowed when an identity-based policy or a resource-based policy
 *    naming the principal allows it, and, where the principal has a permissions boundary, the
 *    boundary allows it too ("the effective permissions are the intersection"; a boundary's
 *    implicit deny also limits what a resource-based policy grants to a role's ARN).
 * 3. Anything else is an `implicit-deny`.
 *
 * Policies are the documents CloudFormation renders (tokens already resolved by the caller):
 * `Statement` one object or a list, `Action`/`NotAction` and `Resource`/`NotResource` a string
 * or a list, `Condition` as IAM writes it. They are compiled once (`compilePolicies`): every
 * wildcard to a RegExp, every condition to a function, so an evaluation parses nothing. Not
 * modelled: SCPs and RCPs, session policies, cross-account requests, and which actions a
 * service authorizes for a call (the caller names the action and resource).
 */

import {
  type ConditionBlock,
  type ConditionTest,
  compileCondition,
} from './iam-condition-operators.ts'
import {
  actionMatcher,
  type ContextValue,
  type Matcher,
  normalizeContext,
  type RequestContext,
  resourceMatcher,
} from './iam-patterns.ts'

export type { RequestContext } from './iam-patterns.ts'

export interface PolicyStatement {
  Sid?: string
  Effect: 'Allow' | 'Deny' | string
  Action?: string | string[]
  NotAction?: string | string[]
  Resource?: string | string[]
  NotResource?: string | string[]
  Principal?: string | Record<string, string | string[]>
  NotPrincipal?: string | Record<string, string | string[]>
  Condition?: ConditionBlock
}

export interface PolicyDocument {
  Version?: string
  Id?: string
  Statement: PolicyStatement | PolicyStatement[]
}

export interface IamRequest {
  /** `service:Action`, e.g. `dynamodb:GetItem` (matched case-insensitively). */
  action: string
  /** The resource's ARN (matched case-sensitively). */
  resource: string
  /** Condition keys and their values (`aws:SourceIp`, `dynamodb:LeadingKeys`: a list). */
  context?: RequestContext
  /**
   * The caller's ARN, what a resource-based policy's `Principal` must name: a role session
   * (`arn:aws:sts::111122223333:assumed-role/name/session`), which a grant to its role's ARN
   * also names, a role or a user.
   */
  principal?: string
}

export interface PolicySet {
  identityPolicies: readonly PolicyDocument[]
  permissionsBoundary?: PolicyDocument | undefined
  resourcePolicy?: PolicyDocument | undefined
}

export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny'
export type PolicyKind = 'identity' | 'permissions-boundary' | 'resource'

/** The statement that decided, and where it stands. */
export interface DecidingStatement {
  policy: PolicyKind
  /** The policy's index among the identity policies (0 for the boundary and the resource policy). */
  policyIndex: number
  statementIndex: number
  sid: string | undefined
  statement: PolicyStatement
}

export interface Evaluation {
  decision: Decision
  /** The Deny that matched, or the Allow that granted; none for an implicit deny. */
  statement: DecidingStatement | undefined
  /** Why, in a sentence (for test failures and the local server's refusals). */
  reason: string
}

interface CompiledStatement {
  deny: boolean
  actions: (action: string) => boolean
  resources: Matcher
  principals: ((principal: string | undefined) => Naming) | undefined
  condition: ConditionTest | undefined
  where: DecidingStatement
}

const list = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

const negate =
  <A extends unknown[]>(test: (...args: A) => boolean) =>
  (...args: A): boolean =>
    !test(...args)

/**
 * How a resource-based policy's Principal names the caller: directly (the caller's own ARN: a
 * user, or a role session's `arn:aws:sts::…:assumed-role/…`), through the session's role
 * (`arn:aws:iam::…:role/…`), or not at all. `*` and `{"AWS": "*"}` name everyone directly; an
 * account id (or its root ARN) delegates to the account's own policies and grants nothing here.
 */
type Naming = 'direct' | 'role' | undefined

const sessionRole = (caller: string): string | undefined => {
  const match = /^arn:([^:]+):sts::(\d{12}):assumed-role\/([^/]+)\//.exec(caller)
  return match ? `arn:${match[1]}:iam::${match[2]}:role/${match[3]}` : undefined
}

const principalMatcher = (
  principal: PolicyStatement['Principal'],
): ((caller: string | undefined) => Naming) => {
  if (principal === '*') return () => 'direct'
  const named = new Set(Object.values(principal ?? {}).flatMap((value) => list(value)))
  if (named.has('*')) return () => 'direct'
  return (caller) => {
    if (caller === undefined) return undefined
    if (named.has(caller))
      return sessionRole(caller) === undefined && caller.includes(':role/') ? 'role' : 'direct'
    const role = sessionRole(caller)
    return role !== undefined && named.has(role) ? 'role' : undefined
  }
}

/** NotPrincipal: everyone the list does not name, each as a direct grant. */
const notPrincipal =
  (named: (caller: string | undefined) => Naming) =>
  (caller: string | undefined): Naming =>
    named(caller) === undefined ? 'direct' : undefined

const compileStatement = (
  statement: PolicyStatement,
  where: DecidingStatement,
  variables: boolean,
): CompiledStatement => {
  const effect = statement.Effect
  if (effect !== 'Allow' && effect !== 'Deny') {
    throw new Error(`Statement ${where.sid ?? where.statementIndex}: Effect must be Allow or Deny`)
  }
  const actions =
    statement.NotAction !== undefined
      ? negate(actionMatcher(list(statement.NotAction)))
      : actionMatcher(list(statement.Action))
  // A resource-based policy may leave Resource out: it is the resource it is attached to.
  const resources =
    statement.NotResource !== undefined
      ? negate(resourceMatcher(list(statement.NotResource), variables))
      : statement.Resource === undefined && where.policy === 'resource'
        ? () => true
        : resourceMatcher(list(statement.Resource), variables)
  const principals =
    where.policy !== 'resource'
      ? undefined
      : statement.NotPrincipal !== undefined
        ? notPrincipal(principalMatcher(statement.NotPrincipal))
        : principalMatcher(statement.Principal)
  return {
    deny: effect === 'Deny',
    actions,
    resources,
    principals,
    condition: compileCondition(statement.Condition, variables),
    where,
  }
}

const compileDocument = (
  document: PolicyDocument,
  policy: PolicyKind,
  policyIndex: number,
): CompiledStatement[] => {
  const variables = document.Version === '2012-10-17'
  const statements = Array.isArray(document.Statement) ? document.Statement : [document.Statement]
  return statements.map((statement, statementIndex) =>
    compileStatement(
      statement,
      { policy, policyIndex, statementIndex, sid: statement.Sid, statement },
      variables,
    ),
  )
}

const applies = (
  statement: CompiledStatement,
  request: IamRequest,
  context: Map<string, ContextValue>,
): boolean =>
  statement.actions(request.action) &&
  statement.resources(request.resource, context) &&
  (statement.principals === undefined || statement.principals(request.principal) !== undefined) &&
  (statement.condition === undefined || statement.condition(context))

const firstApplying = (
  statements: readonly CompiledStatement[],
  deny: boolean,
  request: IamRequest,
  context: Map<string, ContextValue>,
): CompiledStatement | undefined =>
  statements.find((s) => s.deny === deny && applies(s, request, context))

const describe = (where: DecidingStatement): string =>
  `${where.policy} policy${where.policy === 'identity' ? ` ${where.policyIndex}` : ''}, statement ${where.sid ?? where.statementIndex}`

export interface CompiledPolicies {
  evaluate(request: IamRequest): Evaluation
}

/** The policies compiled once; `evaluate` is then a walk over precompiled tests. */
export const compilePolicies = (policies: PolicySet): CompiledPolicies => {
  const identity = policies.identityPolicies.flatMap((document, index) =>
    compileDocument(document, 'identity', index),
  )
  const boundary = policies.permissionsBoundary
    ? compileDocument(policies.permissionsBoundary, 'permissions-boundary', 0)
    : undefined
  const resource = policies.resourcePolicy
    ? compileDocument(policies.resourcePolicy, 'resource', 0)
    : []
  const all = [...identity, ...(boundary ?? []), ...resource]
  return {
    evaluate: (request) => {
      const context = normalizeContext(request.context)
      const denied = firstApplying(all, true, request, context)
      if (denied) {
        return {
          decision: 'explicit-deny',
          statement: denied.where,
          reason: `explicitly denied by ${describe(denied.where)}`,
        }
      }
      const byIdentity = firstApplying(identity, false, request, context)
      const byResource = byIdentity ? undefined : firstApplying(resource, false, request, context)
      const granted = byIdentity ?? byResource
      if (!granted) {
        return {
          decision: 'implicit-deny',
          statement: undefined,
          reason: `no ${resource.length > 0 ? 'identity-based or resource-based' : 'identity-based'} policy allows ${request.action} on ${request.resource}`,
        }
      }
      // A grant to the caller's own ARN (a user, a role session) is not limited by the
      // boundary; a grant to a role's ARN, like an identity-based one, is.
      const direct = byResource?.principals?.(request.principal) === 'direct'
      if (boundary && !direct && !firstApplying(boundary, false, request, context)) {
        return {
          decision: 'implicit-deny',
          statement: undefined,
          reason: `the permissions boundary does not allow ${request.action} on ${request.resource}`,
        }
      }
      return {
        decision: 'allow',
        statement: granted.where,
        reason: `allowed by ${describe(granted.where)}`,
      }
    },
  }
}

const compiledSets = new WeakMap<PolicySet, CompiledPolicies>()

/**
 * One request against a set of policies, compiled on the first call for that set object and
 * kept with it (a set changed in place after that is not seen: compile it again with
 * `compilePolicies`).
 */
export const evaluate = (request: IamRequest, policies: PolicySet): Evaluation => {
  let compiled = compiledSets.get(policies)
  if (!compiled) {
    compiled = compilePolicies(policies)
    compiledSets.set(policies, compiled)
  }
  return compiled.evaluate(request)
}
