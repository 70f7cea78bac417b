import type { RestApi } from 'aws-cdk-lib/aws-apigateway'
import { CfnIPSet, CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2'
import type { Construct } from 'constructs'
import type { StageConfig } from '#infra/config/stage-config.ts'
import {
  EDGE_ANSWERS,
  EDGE_RULES,
  type EdgeRule,
  type EdgeScope,
  KEY_HEADER,
  KEY_HEADER_TRANSFORMATIONS,
  KEY_SCHEME,
  MAX_KEYED_HEADER_LENGTH,
  MIN_KEYED_HEADER_LENGTH,
  PREFLIGHT_METHOD,
} from '#shared/edge/edge-rules-config.ts'
import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { corsHeaders } from '#shared/http/cors-headers.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'

/**
 * How much of an API Gateway request body WAF inspects by default: 16 KB (16,384 bytes); a longer
 * body is "oversize" ("Body", AWS WAFV2 API Reference). The body-size rule needs the API's limit
 * inside it, or it would refuse bodies the API accepts.
 */
export const WAF_BODY_INSPECTION_BYTES = 16_384

const errorBody = (code: ErrorCode, message = ERROR_MESSAGES[code]) =>
  JSON.stringify({ code, message, status: ERROR_STATUS[code] })

const visibility = (metricName: string) => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
})

/**
 * Requests whose Authorization header looks like it carries a key (carriesKey in
 * shared/edge/edge-rules-config.ts, as WAF statements). Coarser than the gateway's token
 * validation pattern (WAF's regex has no capturing groups, "Supported regular expression syntax
 * in AWS WAF", https://docs.aws.amazon.com/waf/latest/developerguide/waf-regex-pattern-support.html);
 * what passes this but not the pattern is answered 401 by API Gateway without any invocation.
 */
const carriesKeyStatement = {
  andStatement: {
    statements: [
      {
        byteMatchStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          positionalConstraint: 'STARTS_WITH',
          searchString: KEY_SCHEME,
          textTransformations: [{ priority: 0, type: 'LOWERCASE' }],
        },
      },
      {
        sizeConstraintStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          comparisonOperator: 'GE',
          size: MIN_KEYED_HEADER_LENGTH,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      },
      {
        sizeConstraintStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          comparisonOperator: 'LE',
          size: MAX_KEYED_HEADER_LENGTH,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      },
    ],
  },
}

/** How the per-key rule reads the header before counting it (KEY_HEADER_TRANSFORMATIONS). */
export const KEY_HEADER_NORMALIZATION = KEY_HEADER_TRANSFORMATIONS.map((type, priority) => ({
  priority,
  type,
}))

/** Every OPTIONS request: CORS preflights, and anything else sent with that method. */
const isPreflight = {
  byteMatchStatement: {
    fieldToMatch: { method: {} },
    positionalConstraint: 'EXACTLY',
    searchString: PREFLIGHT_METHOD,
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
}

const not = (statement: object) => ({ notStatement: { statement } })
const and = (first: object, ...rest: object[]): object =>
  rest.length === 0 ? first : { andStatement: { statements: [first, ...rest] } }
const or = (first: object, ...rest: object[]): object =>
  rest.length === 0 ? first : { orStatement: { statements: [first, ...rest] } }
const inSet = (set: CfnIPSet) => ({ ipSetReferenceStatement: { arn: set.attrArn } })

/**
 * WAF's custom response headers are static and can be set per rule action ("Custom responses for
 * Block actions", AWS WAF Developer Guide; a value is at most 255 characters, API_CustomHTTPHeader):
 * each block answer carries the stage's CORS headers, as the gateway's own answers do, so a page
 * can read the 429 and its Retry-After. A refused preflight stays unreadable whatever it carries:
 * a browser needs a 2xx answer to a preflight (Fetch Standard, "CORS-preflight fetch").
 */
export const WAF_HEADER_VALUE_MAX = 255

const blockedWith = (
  status: number,
  customResponseBodyKey: string,
  headers: Record<string, string>,
) => ({
  block: {
    customResponse: {
      responseCode: status,
      customResponseBodyKey,
      responseHeaders: Object.entries(headers).map(([name, value]) => {
        if (value.length > WAF_HEADER_VALUE_MAX) {
          throw new Error(`WAF custom response header ${name} is over 255 characters: ${value}`)
        }
        return { name, value }
      }),
    },
  },
})

/** The Error bodies the rules answer with, by their keys (EDGE_ANSWERS, and the body limit's). */
const responseBodies = () => ({
  payloadTooLarge: { contentType: 'APPLICATION_JSON', content: errorBody('payload_too_large') },
  ...Object.fromEntries(
    Object.entries(EDGE_ANSWERS).map(([key, answer]) => [
      key,
      {
        contentType: 'APPLICATION_JSON',
        content: errorBody(answer.code, 'message' in answer ? answer.message : undefined),
      },
    ]),
  ),
})

/** An IP set of the stage's web ACL. */
const ipSet = (
  scope: Construct,
  id: string,
  {
    name,
    addresses,
    what,
    version = 'IPV4',
  }: { name: string; addresses: string[]; what: string; version?: 'IPV4' | 'IPV6' },
) =>
  new CfnIPSet(scope, id, {
    name,
    scope: 'REGIONAL',
    ipAddressVersion: version,
    addresses,
    description: what,
  })

/** The IP sets of the stage's web ACL. */
export interface EdgeIpSets {
  /** The operator's block list (empty until an operator fills it: docs/operations.md). */
  blockedAddresses: CfnIPSet
  /** The automatic block's lists, one per IP version (the address-block function fills them). */
  autoBlocked: { ipv4: CfnIPSet; ipv6: CfnIPSet }
  /** Known egress addresses (`wafExemptAddresses`), when there are any. */
  exempt: CfnIPSet | undefined
}

/** What addWebAcl makes: the web ACL and its IP sets. */
export interface WebAcl extends EdgeIpSets {
  acl: CfnWebACL
}

/** A rule's scope as WAF statements (edge-rules-config.ts's EdgeScope). */
const scopeStatements = (scope: EdgeScope, exempt: CfnIPSet | undefined): object[] => [
  ...(scope.carriesKey === undefined
    ? []
    : [scope.carriesKey ? carriesKeyStatement : not(carriesKeyStatement)]),
  ...(scope.preflight === undefined ? [] : [scope.preflight ? isPreflight : not(isPreflight)]),
  ...(scope.exempt === false && exempt ? [not(inSet(exempt))] : []),
]

/** A rule's metric name: `petstore-<stage>-keyed-per-address` for KeyedPerAddress. */
const metricNameOf = (stage: string, rule: string): string =>
  `petstore-${stage}-${rule.replace(/[a-z](?=[A-Z])/g, '$&-').toLowerCase()}`

/** One rule of EDGE_RULES as the web ACL's rule, at `priority`. */
const wafRule = (
  rule: EdgeRule,
  priority: number,
  { config, sets, cors }: { config: StageConfig; sets: EdgeIpSets; cors: Record<string, string> },
) => {
  const answer = EDGE_ANSWERS[rule.answer]
  const scope = scopeStatements(rule.scope, sets.exempt)
  const statement =
    rule.type === 'block'
      ? and(
          rule.list === 'operator'
            ? inSet(sets.blockedAddresses)
            : or(inSet(sets.autoBlocked.ipv4), inSet(sets.autoBlocked.ipv6)),
          ...scope,
        )
      : {
          rateBasedStatement: {
            ...(rule.per === 'address'
              ? { aggregateKeyType: 'IP' }
              : {
                  aggregateKeyType: 'CUSTOM_KEYS',
                  customKeys: [
                    {
                      header: { name: KEY_HEADER, textTransformations: KEY_HEADER_NORMALIZATION },
                    },
                  ],
                }),
            limit: rule.limit(config),
            evaluationWindowSec: rule.windowSeconds,
            ...(scope[0] ? { scopeDownStatement: and(scope[0], ...scope.slice(1)) } : {}),
          },
        }
  return {
    name: rule.name,
    priority,
    statement,
    action: blockedWith(ERROR_STATUS[answer.code], rule.answer, {
      ...cors,
      'Retry-After': String(answer.retryAfterSeconds(config)),
    }),
    visibilityConfig: visibility(metricNameOf(config.stage, rule.name)),
  }
}

/** The IP sets the web ACL refers to: the operator's and the automatic block lists, the exemptions. */
const edgeIpSets = (scope: Construct, config: StageConfig): EdgeIpSets => {
  const prefix = `petstore-${config.stage}`
  const autoBlock = (version: 'IPV4' | 'IPV6') =>
    ipSet(scope, `AutoBlockedAddresses${version === 'IPV4' ? 'V4' : 'V6'}`, {
      name: `${prefix}-auto-blocked-${version.toLowerCase()}`,
      addresses: [],
      version,
      what: 'Addresses blocked for a while after too many unauthorized requests by the address-block function, see docs/operations.md Automatic block',
    })
  return {
    blockedAddresses: ipSet(scope, 'BlockedAddresses', {
      name: `${prefix}-blocked-addresses`,
      addresses: [],
      what: 'Addresses an operator refuses for a while, see docs/operations.md Support runbook',
    }),
    autoBlocked: { ipv4: autoBlock('IPV4'), ipv6: autoBlock('IPV6') },
    exempt:
      config.wafExemptAddresses.length === 0
        ? undefined
        : ipSet(scope, 'ExemptAddresses', {
            name: `${prefix}-exempt-addresses`,
            addresses: config.wafExemptAddresses,
            what: 'Known egress addresses the per-address rules skip and the automatic block never blocks, context wafExemptAddresses',
          }),
  }
}

/**
 * The stage's AWS WAF web ACL (context `waf`, on by default in both stages), answering in the
 * API's Error shape with the stage's CORS headers (docs/operations.md, "Edge rules"). First
 * `BodyOverApiLimit`: bodies over the API's 16 KiB limit get 413 payload_too_large at the edge.
 * WAF inspects the first 16 KB of an API Gateway request body by default and `oversizeHandling:
 * MATCH` counts a longer body as a match, so every body between Lambda's 6 MB invoke payload limit
 * ("Lambda quotas") and API Gateway's 10 MB REST payload limit ("Amazon API Gateway quotas") is
 * refused here with a proper Error body. Then the address and key rules of EDGE_RULES
 * (shared/edge/edge-rules-config.ts), in their order. A scope-down statement narrows what a
 * rate-based rule counts and blocks: "If you define a scope-down statement for the rule, AWS WAF
 * only aggregates, counts, and rate limits requests that match the scope-down statement"
 * (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-request-limiting.html);
 * the per-key rule aggregates on the header's value (a custom key,
 * https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-aggregation-options.html).
 */
export const addWebAcl = (scope: Construct, config: StageConfig, api: RestApi): WebAcl => {
  if (MAX_BODY_BYTES > WAF_BODY_INSPECTION_BYTES) {
    throw new Error(
      `The API accepts ${MAX_BODY_BYTES}-byte bodies but WAF inspects ${WAF_BODY_INSPECTION_BYTES}: raise the web ACL's body inspection limit (AssociationConfig) first`,
    )
  }
  const prefix = `petstore-${config.stage}`
  const sets = edgeIpSets(scope, config)
  const cors = corsHeaders(config.corsAllowOrigin)
  const acl = new CfnWebACL(scope, 'WebAcl', {
    scope: 'REGIONAL',
    defaultAction: { allow: {} },
    visibilityConfig: visibility(`${prefix}-web-acl`),
    customResponseBodies: responseBodies(),
    rules: [
      {
        name: 'BodyOverApiLimit',
        priority: 0,
        statement: {
          sizeConstraintStatement: {
            fieldToMatch: { body: { oversizeHandling: 'MATCH' } },
            comparisonOperator: 'GT',
            size: MAX_BODY_BYTES,
            textTransformations: [{ priority: 0, type: 'NONE' }],
          },
        },
        action: blockedWith(413, 'payloadTooLarge', cors),
        visibilityConfig: visibility(`${prefix}-body-over-limit`),
      },
      ...EDGE_RULES.map((rule, index) => wafRule(rule, index + 1, { config, sets, cors })),
    ],
  })
  new CfnWebACLAssociation(scope, 'WebAclAssociation', {
    resourceArn: api.deploymentStage.stageArn,
    webAclArn: acl.attrArn,
  })
  return { acl, ...sets }
}
