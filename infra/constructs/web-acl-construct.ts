import type { RestApi } from 'aws-cdk-lib/aws-apigateway'
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2'
import type { Construct } from 'constructs'
import type { StageConfig } from '#infra/config/stage-config.ts'
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

/**
 * The stage's optional AWS WAF web ACL (context `waf`, on by default in production), answering
 * in the API's Error shape:
 * - bodies over the API's 16 KiB limit get 413 payload_too_large at the edge. WAF inspects the
 *   first 16 KB of an API Gateway request body by default and `oversizeHandling: MATCH` counts a
 *   longer body as a match, so every body between Lambda's 6 MB invoke payload limit ("Lambda
 *   quotas") and API Gateway's 10 MB REST payload limit ("Amazon API Gateway quotas") is refused
 *   here with a proper Error body instead of failing the integration.
 * - one source address sending more than `wafRateLimitPer5Minutes` requests in 5 minutes is
 *   blocked with 429 rate_limited (brute force on keys, floods of unauthenticated requests that
 *   no usage plan meters). The default is twice the largest plan's rate, so no plan is undercut.
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
        content: errorBody('rate_limited', 'Too many requests from this address; retry later.'),
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
        name: 'RatePerSourceAddress',
        priority: 1,
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'IP',
            limit: config.wafRateLimitPer5Minutes,
            evaluationWindowSec: WAF_WINDOW_SECONDS,
          },
        },
        action: {
          block: {
            customResponse: {
              responseCode: 429,
              customResponseBodyKey: 'rateLimited',
              // WAF re-evaluates the address every 30 s or so; a minute is an honest hint.
              responseHeaders: [{ name: 'Retry-After', value: '60' }],
            },
          },
        },
        visibilityConfig: visibility(`${prefix}-rate-per-address`),
      },
    ],
  })
  new CfnWebACLAssociation(scope, 'WebAclAssociation', {
    resourceArn: api.deploymentStage.stageArn,
    webAclArn: acl.attrArn,
  })
  return acl
}
