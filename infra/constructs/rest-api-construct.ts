import { RemovalPolicy, Validations } from 'aws-cdk-lib'
import {
  AccessLogField,
  AccessLogFormat,
  ApiKeySourceType,
  AuthorizationType,
  EndpointType,
  type IAuthorizer,
  LogGroupLogDestination,
  MethodLoggingLevel,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway'
import { LogGroup } from 'aws-cdk-lib/aws-logs'
import type { Construct } from 'constructs'
import { logRemovalPolicy, type StageConfig } from '#infra/config/stage-config.ts'

// The stage's REST API, its stage settings and its access log.

export interface StageRestApi {
  api: RestApi
  accessLogGroup: LogGroup
  /** API Gateway's execution log group, created by the stack before the stage writes to it. */
  executionLogGroup: LogGroup
}

/** One JSON line per request: the key's id and plan from the authorizer, never the key itself. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: AccessLogField.contextRequestId(),
    extendedRequestId: AccessLogField.contextExtendedRequestId(),
    requestTime: AccessLogField.contextRequestTime(),
    ip: AccessLogField.contextIdentitySourceIp(),
    userAgent: AccessLogField.contextIdentityUserAgent(),
    httpMethod: AccessLogField.contextHttpMethod(),
    resourcePath: AccessLogField.contextResourcePath(),
    path: AccessLogField.contextPath(),
    protocol: AccessLogField.contextProtocol(),
    status: AccessLogField.contextStatus(),
    responseLength: AccessLogField.contextResponseLength(),
    responseLatency: AccessLogField.contextResponseLatency(),
    integrationLatency: AccessLogField.contextIntegrationLatency(),
    integrationStatus: AccessLogField.contextIntegrationStatus(),
    authorizerLatency: AccessLogField.contextAuthorizerIntegrationLatency(),
    authorizerError: AccessLogField.contextAuthorizerError(),
    errorType: AccessLogField.contextErrorResponseType(),
    errorMessage: AccessLogField.contextErrorMessage(),
    keyId: AccessLogField.contextAuthorizerPrincipalId(),
    plan: AccessLogField.contextAuthorizer('plan'),
    xrayTraceId: AccessLogField.contextXrayTraceId(),
  }),
)

/**
 * The stage's REST API (id `RestApi`) and its access log group (id `AccessLogs`), both in `scope`
 * itself (see PetstoreApi): a regional endpoint whose every method requires the authorizer and
 * an API key, a traced and throttled stage, and the cdk-nag findings this design accepts.
 */
export const addRestApi = (
  scope: Construct,
  config: StageConfig,
  authorizer: IAuthorizer,
): StageRestApi => {
  const { stage } = config
  const accessLogGroup = new LogGroup(scope, 'AccessLogs', {
    logGroupName: `/petstore/${stage}/api-access`,
    retention: config.logRetention,
    removalPolicy: logRemovalPolicy(config),
  })

  const api = new RestApi(scope, 'RestApi', {
    restApiName: `petstore-${stage}`,
    description: `Petstore API (${stage})`,
    endpointTypes: [EndpointType.REGIONAL],
    apiKeySourceType: ApiKeySourceType.AUTHORIZER,
    // Access and execution logs need the account-wide CloudWatch role. RETAIN: deleting one
    // stage must not pull the role from under the other stages of the account.
    cloudWatchRole: config.apiGatewayCloudWatchRole,
    ...(config.apiGatewayCloudWatchRole
      ? { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN }
      : {}),
    deployOptions: {
      stageName: stage,
      description: `Petstore ${stage}`,
      tracingEnabled: true,
      // Errors only, and never request or response data: those carry API keys.
      loggingLevel: MethodLoggingLevel.ERROR,
      dataTraceEnabled: false,
      throttlingRateLimit: config.throttleRateLimit,
      throttlingBurstLimit: config.throttleBurstLimit,
      accessLogDestination: new LogGroupLogDestination(accessLogGroup),
      accessLogFormat: ACCESS_LOG_FORMAT,
    },
    defaultMethodOptions: {
      authorizer,
      authorizationType: AuthorizationType.CUSTOM,
      apiKeyRequired: true,
    },
  })
  // API Gateway writes execution logs to `API-Gateway-Execution-Logs_{api id}/{stage}` and creates
  // that group itself, with no retention and outside the stack, unless it exists first ("Set up
  // CloudWatch logging for REST APIs in API Gateway", AWS docs): the stack owns it, with the stage's
  // retention, and the stage waits for it.
  const executionLogGroup = new LogGroup(scope, 'ExecutionLogs', {
    logGroupName: `API-Gateway-Execution-Logs_${api.restApiId}/${stage}`,
    retention: config.logRetention,
    removalPolicy: logRemovalPolicy(config),
  })
  api.deploymentStage.node.addDependency(executionLogGroup)
  acknowledgeRules(api, config)
  return { api, accessLogGroup, executionLogGroup }
}

/** cdk-nag findings this design accepts on purpose, each with its reason. */
const acknowledgeRules = (api: RestApi, config: StageConfig): void => {
  Validations.of(api).acknowledge(
    {
      id: 'AwsSolutions-APIG2',
      reason:
        'Requests are validated in the functions against the shared zod schemas, so every 400 carries the documented validation_failed body with a details list; a gateway request validator would answer in a different shape.',
    },
    {
      id: 'AwsSolutions-COG4',
      reason:
        'Clients are machines holding API keys: every method uses the TOKEN Lambda authorizer, which validates the bearer key against the stage key mirror, a copy of its API Gateway keys and usage plans. There are no Cognito users.',
    },
  )
  if (!config.waf) {
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG3',
      reason:
        'This stage runs without the WAF web ACL (context waf=false, on by default in both stages): abuse is bounded per key by usage plans, the functions rate limiter and the stage throttle, and every method requires an API key, but nothing bounds one address.',
    })
  }
  if (api.node.tryFindChild('CloudWatchRole')) {
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        'The account-level API Gateway logging role uses the AWS-managed policy documented for it; it is assumed only by apigateway.amazonaws.com to write access and execution logs.',
    })
  }
}
