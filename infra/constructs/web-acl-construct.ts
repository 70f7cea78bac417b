import type { RestApi } from 'aws-cdk-lib/aws-apigateway'
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2'
import type { Construct } from 'constructs'
import { type StageConfig, wafPerKeyLimit } from '#infra/config/stage-config.ts'
import { MAX_AUTHORIZATION_LENGTH } from '#shared/auth/bearer-token.ts'
import { ERROR_MESSAGES, ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'

/** WAF's window for rate-based rules here (60, 120, 300 or 600 s, "Rate-based rule statement"). */
export const WAF_WINDOW_SECONDS = 300

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

const blockWith429 = (customResponseBodyKey: string) => ({
  block: {
    customResponse: {
      responseCode: 429,
      customResponseBodyKey,
      // WAF re-evaluates its counts every 30 s or so; a minute is an honest hint.
      responseHeaders: [{ name: 'Retry-After', value: '60' }],
    },
  },
})

/**
 * The stage's optional AWS WAF web ACL (context `waf`, on by default in production), answering
 * in the API's Error shape (docs/operations.md, "Edge rules"):
 * - bodies over the API's 16 KiB limit get 413 payload_too_large at the edge. WAF inspects the
 *   first 16 KB of an API Gateway request body by default and `oversizeHandling: MATCH` counts a
 *   longer body as a match, so every body between Lambda's 6 MB invoke payload limit ("Lambda
 *   quotas") and API Gateway's 10 MB REST payload limit ("Amazon API Gateway quotas") is refused
 *   here with a proper Error body instead of failing the integration.
 * - `KeylessPerAddress`: requests without a key-shaped Authorization header, counted per source
 *   address; over `wafKeylessPer5Minutes` such requests get 429 too_many_failed_auths. Its
 *   scope-down statement keeps every keyed request out of the count and out of the block: "If you
 *   define a scope-down statement for the rule, AWS WAF only aggregates, counts, and rate limits
 *   requests that match the scope-down statement"
 *   (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-request-limiting.html),
 *   so no neighbour at a customer's address (NAT, proxy) can get the customer's key blocked.
 * - `RatePerKey`: requests with a key-shaped header, counted per header value (a custom
 *   aggregation key, https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-aggregation-options.html),
 *   so a key is only ever counted with its own requests; over twice what the largest plan the
 *   stage accepts may send (wafPerKeyLimit), 429 rate_limited. Such a key is suspended by the
 *   functions' limiter long before; the rule only stops a runaway key's flood at the edge.
 * What WAF cannot tell apart is a wrong key from a right one: wrong keys are counted per key value
 * only, each distinct one costs an authorizer invocation (cached per value for the authorizer's
 * TTL) and gets 401 (docs/operations.md, "Edge rules", has the cost per million).
 */
export const addWebAcl = (scope: Construct, config: StageConfig, api: RestApi): CfnWebACL => {
  if (MAX_BODY_BYTES > WAF_BODY_INSPECTION_BYTES) {
    throw new Error(
      `The API accepts ${MAX_BODY_BYTES}-byte bodies but WAF inspects ${WAF_BODY_INSPECTION_BYTES}: raise the web ACL's body inspection limit (AssociationConfig) first`,
    )
  }
  const prefix = `petstore-${config.stage}`
  const acl = new CfnWebACL(scope, 'WebAcl', {
    scope: 'REGIONAL',
    defaultAction: { allow: {} },
    visibilityConfig: visibility(`${prefix}-web-acl`),
    customResponseBodies: {
      payloadTooLarge: { contentType: 'APPLICATION_JSON', content: errorBody('payload_too_large') },
      rateLimited: {
        contentType: 'APPLICATION_JSON',
        content: errorBody('rate_limited', 'Too many requests with this key; retry later.'),
      },
      tooManyFailedAuths: {
        contentType: 'APPLICATION_JSON',
        content: errorBody('too_many_failed_auths'),
      },
    },
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
        action: {
          block: {
            customResponse: { responseCode: 413, customResponseBodyKey: 'payloadTooLarge' },
          },
        },
        visibilityConfig: visibility(`${prefix}-body-over-limit`),
      },
      {
        name: 'KeylessPerAddress',
        priority: 1,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'IP',
            limit: config.wafKeylessPer5Minutes,
            evaluationWindowSec: WAF_WINDOW_SECONDS,
            scopeDownStatement: { notStatement: { statement: carriesKey } },
          },
        },
        action: blockWith429('tooManyFailedAuths'),
        visibilityConfig: visibility(`${prefix}-keyless-per-address`),
      },
      {
        name: 'RatePerKey',
        priority: 2,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'CUSTOM_KEYS',
            customKeys: [
              {
                header: {
                  name: KEY_HEADER,
                  textTransformations: [{ priority: 0, type: 'NONE' }],
                },
              },
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
  return acl
}
