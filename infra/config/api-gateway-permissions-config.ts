/**
 * API Gateway's part of the execution policy (execution-permissions-config.ts): its ARNs, the
 * entry of the types whose ARNs hold ids only (REST APIs, usage plans, domain names), and the pool
 * key's entries, scoped by tags so that no customer's key is within reach of a release
 * (docs/release-permissions.md, "The pool key").
 */
import { POOL_PLAN_TAG, stageTags } from '#keys/usage-plans-config.ts'
import type {
  ExecutionStatement,
  PermissionScope,
  ResourceTypePermissions,
} from './release-permissions-config.ts'

export const apiStack = (s: PermissionScope): string => `petstore-${s.stage}-api`
export const apigateway = (s: PermissionScope, ...paths: string[]): string[] =>
  paths.map((path) => `arn:${s.partition}:apigateway:${s.region}::${path}`)
const API_GATEWAY_VERBS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((v) => `apigateway:${v}`)

export const apiGatewayEntry = (...paths: string[]): ResourceTypePermissions => ({
  note: "API Gateway's ARNs hold ids, never names: the stage's REST API and usage plans cannot be told from another API's in the Region. Keys: only the pool key's entries name /apikeys, and a plan's keys are denied but the pool plan's.",
  statements: (s) => [
    { actions: API_GATEWAY_VERBS, resources: apigateway(s, ...paths, '/tags/*') },
  ],
})

/**
 * What marks a resource as one the stage's API stack made: CloudFormation's system tag. A tag key
 * starting with `aws:` is reserved: API Gateway's TagResource refuses it ("must not start with
 * aws:", API Gateway API Reference) and only CloudFormation puts it on what it creates (the
 * resource schemas of AWS::ApiGateway::ApiKey and ::UsagePlan declare cloudFormationSystemTags),
 * so no customer's key or plan can carry it, whoever tags it.
 */
export const STACK_NAME_TAG = 'aws:cloudformation:stack-name'

/**
 * The tag keys a tagging request on an API key may carry: what the pool key is created with (the
 * stacks' own tags, the pool tag, CloudFormation's system tags). None of them means anything on a
 * customer's key; `petstore:disableAfter` and `petstore:rotatedFrom`, which do, are not among them.
 */
export const POOL_KEY_TAG_KEYS = [
  ...Object.keys(stageTags('any')),
  POOL_PLAN_TAG.key,
  'aws:cloudformation:*',
] as const

/** Every API key tagging request's resource: /tags/{URL-encoded key ARN} (Service Authorization Reference). */
const keyTags = (s: PermissionScope) => apigateway(s, '/tags/*apikeys*')

/**
 * The pool key of the stage's store keys (h47) is the one API key a release makes. API Gateway's
 * key ARNs hold an id only, so a plain grant on /apikeys/* would reach every key of the Region
 * (every customer's value, GetApiKey with includeValue): each right here is scoped instead by a
 * tag condition, which API Gateway evaluates for keys (aws:RequestTag on POST /apikeys,
 * aws:ResourceTag on /apikeys/{id}: Service Authorization Reference, "Actions, resources, and
 * condition keys for Amazon API Gateway Management"; "Using tags to control access to API Gateway
 * REST API resources").
 */
export const apiKeyEntry: ResourceTypePermissions = {
  note: "Only the pool key: created only with the pool tag, read, changed or deleted only when CloudFormation tagged it as the API stack's (a tag no customer key can carry), never tagged with a tag that means something on a customer's key, never untagged.",
  statements: (s): ExecutionStatement[] => [
    {
      actions: ['apigateway:POST'],
      resources: apigateway(s, '/apikeys'),
      condition: { StringEquals: { [`aws:RequestTag/${POOL_PLAN_TAG.key}`]: POOL_PLAN_TAG.value } },
    },
    {
      actions: ['apigateway:GET', 'apigateway:PATCH', 'apigateway:DELETE'],
      resources: apigateway(s, '/apikeys/*'),
      condition: { StringEquals: { [`aws:ResourceTag/${STACK_NAME_TAG}`]: apiStack(s) } },
    },
    // Tagging on create (CreateApiKey's apigateway:PUT, API operations table).
    { actions: ['apigateway:PUT'], resources: apigateway(s, '/tags/*') },
    {
      sid: 'KeysKeepTheirTags',
      effect: 'Deny',
      actions: ['apigateway:DELETE'],
      resources: keyTags(s),
    },
    {
      sid: 'KeysTaggedOnlyAsThePool',
      effect: 'Deny',
      actions: ['apigateway:PUT'],
      resources: keyTags(s),
      condition: { 'ForAnyValue:StringNotLike': { 'aws:TagKeys': POOL_KEY_TAG_KEYS } },
    },
  ],
}

/**
 * The pool key on the pool plan. A usage plan key inherits its plan's tags for access control
 * ("API Gateway resources that can be tagged": "If a tag is set on a UsagePlan, that tag is
 * inherited by any UsagePlanKey resources under it"), and GetUsagePlanKeys returns each key's
 * value: so every right on a plan's keys (the usage plans' entry grants /usageplans/*) is denied
 * unless the plan is the API stack's pool plan. No condition key names the key being attached, so
 * a customer's key can be attached to the pool plan (docs/release-permissions.md says what that
 * gives: nothing it can read or change).
 */
export const usagePlanKeyEntry: ResourceTypePermissions = {
  note: "Only the pool plan's keys: every other plan's keys (a customer's, the stage's own plans') can be neither listed, read, attached nor detached.",
  statements: (s): ExecutionStatement[] => {
    const planKeys = apigateway(s, '/usageplans/*/keys', '/usageplans/*/keys/*')
    return [
      { actions: ['apigateway:POST', 'apigateway:GET', 'apigateway:DELETE'], resources: planKeys },
      {
        sid: 'PlanKeysOfThisStackOnly',
        effect: 'Deny',
        actions: API_GATEWAY_VERBS,
        resources: planKeys,
        condition: { StringNotEquals: { [`aws:ResourceTag/${STACK_NAME_TAG}`]: apiStack(s) } },
      },
      {
        sid: 'PlanKeysOfThePoolOnly',
        effect: 'Deny',
        actions: API_GATEWAY_VERBS,
        resources: planKeys,
        condition: {
          StringNotEquals: { [`aws:ResourceTag/${POOL_PLAN_TAG.key}`]: POOL_PLAN_TAG.value },
        },
      },
    ]
  },
}
