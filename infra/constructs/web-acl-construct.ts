import type { RestApi } from 'aws-cdk-lib/aws-apigateway'
import { CfnIPSet, CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2'
import type { Construct } from 'constructs'
import { wafPerKeyLimit } from '#infra/config/edge-limits-config.ts'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { MAX_AUTHORIZATION_LENGTH } from '#shared/auth/bearer-token.ts'
import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'

/** WAF's window for the keyless and per-key rules (60, 120, 300 or 600 s, "Rate-based rule statement"). */
export const WAF_WINDOW_SECONDS = 300
/**
 * The per-address keyed rule's window: its limit is a share of a minute of the stage throttle,
 * and a short window lets WAF (which looks back over it about every 10 seconds) stop a host
 * sooner.
 */
export const WAF_KEYED_WINDOW_SECONDS = 60

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

/** The header the API key travels in (`Authorization: Bearer <key>`), as WAF names it. */
const KEY_HEADER = 'authorization'
/** The shortest header that can carry a key: `Bearer ` and a 20-character key. */
const MIN_KEYED_HEADER = 'Bearer '.length + 20

/**
 * Requests whose Authorization header looks like it carries a key: it starts with `bearer ` (any
 * case) and is as long as a bearer header with a key can be. Coarser than the gateway's token
 * validation pattern (WAF's regex has no capturing groups, "Supported regular expression syntax
 * in AWS WAF", https://docs.aws.amazon.com/waf/latest/developerguide/waf-regex-pattern-support.html);
 * what passes this but not the pattern is answered 401 by API Gateway without any invocation.
 */
const carriesKey = {
  andStatement: {
    statements: [
      {
        byteMatchStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          positionalConstraint: 'STARTS_WITH',
          searchString: 'bearer ',
          textTransformations: [{ priority: 0, type: 'LOWERCASE' }],
        },
      },
      {
        sizeConstraintStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          comparisonOperator: 'GE',
          size: MIN_KEYED_HEADER,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      },
      {
        sizeConstraintStatement: {
          fieldToMatch: { singleHeader: { Name: KEY_HEADER } },
          comparisonOperator: 'LE',
          size: MAX_AUTHORIZATION_LENGTH,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      },
    ],
  },
}

/**
 * How the per-key rule reads the header before counting it: lower case, and every run of white
 * space as one space (COMPRESS_WHITE_SPACE, "Text transformations", AWS WAF Developer Guide), so
 * the 1,024 spellings the gateway accepts of one key's header (the case of `Bearer`, 1 to 16
 * spaces) are one counter. Key values differing only in case would share it too; API Gateway's
 * own keys are random, so only a key's owner could send such a pair.
 */
export const KEY_HEADER_NORMALIZATION = [
  { priority: 0, type: 'LOWERCASE' },
  { priority: 1, type: 'COMPRESS_WHITE_SPACE' },
]

/** CORS preflights: they never carry a key, and a browser sends one before each keyed request. */
const isPreflight = {
  byteMatchStatement: {
    fieldToMatch: { method: {} },
    positionalConstraint: 'EXACTLY',
    searchString: 'OPTIONS',
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
}

const not = (statement: object) => ({ notStatement: { statement } })
const and = (...statements: object[]) =>
  statements.length === 1 ? statements[0] : { andStatement: { statements } }

const blockWith429 = (customResponseBodyKey: string, retryAfterSeconds = 60) => ({
  block: {
    customResponse: {
      responseCode: 429,
      customResponseBodyKey,
      // WAF re-evaluates its counts every 10 s or so; a minute is an honest hint.
      responseHeaders: [{ name: 'Retry-After', value: String(retryAfterSeconds) }],
    },
  },
})

/** The Error bodies the rules answer with, by their keys. */
const RESPONSE_BODIES = {
  payloadTooLarge: { contentType: 'APPLICATION_JSON', content: errorBody('payload_too_large') },
  rateLimited: {
    contentType: 'APPLICATION_JSON',
    content: errorBody('rate_limited', 'Too many requests with this key; retry later.'),
  },
  addressRateLimited: {
    contentType: 'APPLICATION_JSON',
    content: errorBody(
      'rate_limited',
      'Too many requests with keys from this address; retry later.',
    ),
  },
  addressBlocked: {
    contentType: 'APPLICATION_JSON',
    content: errorBody(
      'rate_limited',
      'Requests from this address are refused for a while; retry later.',
    ),
  },
  tooManyFailedAuths: {
    contentType: 'APPLICATION_JSON',
    content: errorBody('too_many_failed_auths'),
  },
}

/** An IPv4 IP set of the stage's web ACL. */
const ipSet = (
  scope: Construct,
  id: string,
  { name, addresses, what }: { name: string; addresses: string[]; what: string },
) =>
  new CfnIPSet(scope, id, {
    name,
    scope: 'REGIONAL',
    ipAddressVersion: 'IPV4',
    addresses,
    description: what,
  })

/** The rules that refuse at once: bodies over the API's limit, and the block list. */
const edgeRefusals = (prefix: string, blockedAddresses: CfnIPSet) => [
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
    action: {
      block: {
        customResponse: { responseCode: 413, customResponseBodyKey: 'payloadTooLarge' },
      },
    },
    visibilityConfig: visibility(`${prefix}-body-over-limit`),
  },
  {
    name: 'BlockedAddresses',
    priority: 1,
    statement: { ipSetReferenceStatement: { arn: blockedAddresses.attrArn } },
    action: blockWith429('addressBlocked', 300),
    visibilityConfig: visibility(`${prefix}-blocked-addresses`),
  },
]

/** What addWebAcl makes: the web ACL, and the IP set an operator adds addresses to block. */
export interface WebAcl {
  acl: CfnWebACL
  blockedAddresses: CfnIPSet
}

/**
 * The stage's AWS WAF web ACL (context `waf`, on by default in both stages), answering in the
 * API's Error shape (docs/operations.md, "Edge rules"). In order:
 * - `BodyOverApiLimit`: bodies over the API's 16 KiB limit get 413 payload_too_large at the edge.
 *   WAF inspects the first 16 KB of an API Gateway request body by default and
 *   `oversizeHandling: MATCH` counts a longer body as a match, so every body between Lambda's
 *   6 MB invoke payload limit ("Lambda quotas") and API Gateway's 10 MB REST payload limit
 *   ("Amazon API Gateway quotas") is refused here with a proper Error body.
 * - `BlockedAddresses`: every request from an address of the `blocked-addresses` IP set, which
 *   the stack creates empty and an operator fills for a while (docs/operations.md, "Support
 *   runbook"), gets 429 rate_limited.
 * - `KeylessPerAddress`: requests without a key-shaped Authorization header, preflights left
 *   out, counted per source address; over `wafKeylessPer5Minutes` such requests get 429
 *   too_many_failed_auths. "If you define a scope-down statement for the rule, AWS WAF only
 *   aggregates, counts, and rate limits requests that match the scope-down statement"
 *   (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-request-limiting.html),
 *   so neither a keyed request nor a browser's preflight is ever counted or refused by it.
 * - `KeyedPerAddress`: requests with a key-shaped header, counted per source address over the
 *   last minute, whichever keys they carry: over `wafKeyedPerAddressPerMinute` (half a minute of
 *   one method's stage throttle, at least three times the largest plan) 429 rate_limited. It is
 *   what bounds a flood of forged keys from one host, which no per-key count can see. Addresses of
 *   `wafExemptAddresses` (a known egress) are left out.
 * - `RatePerKey`: requests with a key-shaped header, counted per normalized header value (a
 *   custom aggregation key, https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-aggregation-options.html),
 *   over twice what the largest plan the stage accepts may send (wafPerKeyLimit), 429
 *   rate_limited: a runaway key's flood stops at the edge, wherever it comes from.
 */
export const addWebAcl = (scope: Construct, config: StageConfig, api: RestApi): WebAcl => {
  if (MAX_BODY_BYTES > WAF_BODY_INSPECTION_BYTES) {
    throw new Error(
      `The API accepts ${MAX_BODY_BYTES}-byte bodies but WAF inspects ${WAF_BODY_INSPECTION_BYTES}: raise the web ACL's body inspection limit (AssociationConfig) first`,
    )
  }
  const prefix = `petstore-${config.stage}`
  const blockedAddresses = ipSet(scope, 'BlockedAddresses', {
    name: `${prefix}-blocked-addresses`,
    addresses: [],
    what: 'Addresses an operator refuses for a while, see docs/operations.md Support runbook',
  })
  const exempt =
    config.wafExemptAddresses.length === 0
      ? undefined
      : ipSet(scope, 'ExemptAddresses', {
          name: `${prefix}-exempt-addresses`,
          addresses: config.wafExemptAddresses,
          what: 'Known egress addresses the per-address keyed rule skips, context wafExemptAddresses',
        })
  const acl = new CfnWebACL(scope, 'WebAcl', {
    scope: 'REGIONAL',
    defaultAction: { allow: {} },
    visibilityConfig: visibility(`${prefix}-web-acl`),
    customResponseBodies: RESPONSE_BODIES,
    rules: [
      ...edgeRefusals(prefix, blockedAddresses),
      {
        name: 'KeylessPerAddress',
        priority: 2,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'IP',
            limit: config.wafKeylessPer5Minutes,
            evaluationWindowSec: WAF_WINDOW_SECONDS,
            scopeDownStatement: and(not(carriesKey), not(isPreflight)),
          },
        },
        action: blockWith429('tooManyFailedAuths'),
        visibilityConfig: visibility(`${prefix}-keyless-per-address`),
      },
      {
        name: 'KeyedPerAddress',
        priority: 3,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'IP',
            limit: config.wafKeyedPerAddressPerMinute,
            evaluationWindowSec: WAF_KEYED_WINDOW_SECONDS,
            scopeDownStatement: exempt
              ? and(carriesKey, not({ ipSetReferenceStatement: { arn: exempt.attrArn } }))
              : carriesKey,
          },
        },
        action: blockWith429('addressRateLimited'),
        visibilityConfig: visibility(`${prefix}-keyed-per-address`),
      },
      {
        name: 'RatePerKey',
        priority: 4,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'CUSTOM_KEYS',
            customKeys: [
              { header: { name: KEY_HEADER, textTransformations: KEY_HEADER_NORMALIZATION } },
            ],
            limit: wafPerKeyLimit(config.largestPlanPerMinute),
            evaluationWindowSec: WAF_WINDOW_SECONDS,
            scopeDownStatement: carriesKey,
          },
        },
        action: blockWith429('rateLimited'),
        visibilityConfig: visibility(`${prefix}-rate-per-key`),
      },
    ],
  })
  new CfnWebACLAssociation(scope, 'WebAclAssociation', {
    resourceArn: api.deploymentStage.stageArn,
    webAclArn: acl.attrArn,
  })
  return { acl, blockedAddresses }
}
