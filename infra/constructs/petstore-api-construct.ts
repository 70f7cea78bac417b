import { Aws, Duration, RemovalPolicy, Tags, Validations } from 'aws-cdk-lib'
import {
  AccessLogField,
  AccessLogFormat,
  ApiKeySourceType,
  AuthorizationType,
  type DomainName,
  EndpointType,
  type IResource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  Period,
  ResponseType,
  RestApi,
  SecurityPolicy,
  TokenAuthorizer,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway'
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import { PolicyStatement } from 'aws-cdk-lib/aws-iam'
import { LogGroup } from 'aws-cdk-lib/aws-logs'
import { ARecord, HostedZone, RecordTarget } from 'aws-cdk-lib/aws-route53'
import { ApiGatewayDomain } from 'aws-cdk-lib/aws-route53-targets'
import { Construct } from 'constructs'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import {
  GATEWAY_RESPONSES,
  gatewayHeaderValue,
  gatewayResponseBody,
} from '#infra/config/gateway-responses-config.ts'
import { metricsNamespace, type StageConfig } from '#infra/config/stage-config.ts'
import { usagePlanSpecs } from '#infra/config/usage-plans-config.ts'
import { formatPlanLimits, type PlanName, USAGE_PLAN_TAG } from '#shared/config/plans-config.ts'
import { API_VERSION_PATH, type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { PET_TABLE } from '#shared/data/table-schema.ts'
import { ERROR_STATUS } from '#shared/errors/error-codes.ts'
import { AUTHORIZER_OPERATION } from '#shared/observability/metrics.ts'
import { PetstoreFunction } from './petstore-function-construct.ts'

export interface PetstoreApiProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
}

/**
 * The only API Gateway control-plane reads the authorizer's key store makes: GetApiKeys
 * (GET /apikeys), GetUsagePlans (GET /usageplans) and GetUsagePlanKeys
 * (GET /usageplans/{id}/keys). Plan ids are not known before deployment, hence the one wildcard.
 */
export const KEY_STORE_READ_PATHS = ['/apikeys', '/usageplans', '/usageplans/*/keys'] as const

const pascalCase = (operationId: string): string =>
  operationId.charAt(0).toUpperCase() + operationId.slice(1)

/** The resource for `/v1/pets/{petId}`, creating each missing segment once. */
const resourceAt = (root: IResource, path: string): IResource =>
  path
    .split('/')
    .filter((segment) => segment !== '')
    .reduce<IResource>(
      (parent, segment) => parent.getResource(segment) ?? parent.addResource(segment),
      root,
    )

/**
 * The stage's REST API: one function per route of the shared route table under `/v1`, the
 * TOKEN authorizer in front of every method, API keys taken from the authorizer and metered by
 * the usage plans, and API Gateway's own errors rewritten to the API's Error body.
 */
export class PetstoreApi extends Construct {
  readonly api: RestApi
  readonly functions: Record<OperationId, PetstoreFunction>
  readonly authorizerFunction: PetstoreFunction
  readonly usagePlans: Record<PlanName, UsagePlan>
  readonly accessLogGroup: LogGroup
  readonly domain: DomainName | undefined
  /** `https://.../v1`: the base address clients use. */
  readonly baseUrl: string

  constructor(
    scope: Construct,
    id: string,
    { config, petTable, rateLimitTable }: PetstoreApiProps,
  ) {
    super(scope, id)
    const { stage } = config
    const logRemovalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY
    const functionDefaults = {
      metricsNamespace: metricsNamespace(stage),
      logRetention: config.logRetention,
      logRemovalPolicy,
    }

    this.authorizerFunction = new PetstoreFunction(this, 'Authorizer', {
      ...functionDefaults,
      entry: AUTHORIZER_ENTRY,
      serviceName: AUTHORIZER_OPERATION,
      description: `Petstore ${stage}: API key authorizer`,
      logGroupName: `/petstore/${stage}/authorizer`,
      // Small and quick: it hashes a header and looks it up in a cached key snapshot.
      memorySize: 256,
      timeout: Duration.seconds(5),
      environment: { ENTERPRISE_LIMITS: formatPlanLimits(config.enterpriseLimits) },
    })
    // The authorizer takes the REST API id and stage from the methodArn, so it needs no API id.
    this.authorizerFunction.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['apigateway:GET'],
        resources: KEY_STORE_READ_PATHS.map(
          (path) => `arn:${Aws.PARTITION}:apigateway:${Aws.REGION}::${path}`,
        ),
      }),
    )
    Validations.of(this.authorizerFunction).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/usageplans/*/keys]`,
      reason:
        'GetUsagePlanKeys is read for every usage plan of the stage, including plans created in the console after deployment, so plan ids cannot be listed in advance. Only apigateway:GET is allowed.',
    })

    const entries = ROUTES.map((route) => {
      const fn = new PetstoreFunction(this, pascalCase(route.operationId), {
        ...functionDefaults,
        entry: functionEntry(route),
        serviceName: route.operationId,
        description: `Petstore ${stage}: ${route.operationId} (${route.method} ${API_VERSION_PATH}${route.path})`,
        logGroupName: `/petstore/${stage}/${route.functionName}`,
      })
      if (route.access === 'read') {
        fn.bindTable(petTable, 'RO', {
          envVar: 'TABLE_NAME',
          indexNames: [PET_TABLE.statusIndex.name],
        })
      } else {
        // create: PutItem of the pet, UpdateItem of the id counter; never Scan or Query.
        fn.bindTable(petTable, 'RW', { envVar: 'TABLE_NAME' })
      }
      // Every operation is rate limited: counters are read and updated item by item.
      fn.bindTable(rateLimitTable, 'RW', { envVar: 'RATE_LIMIT_TABLE_NAME' })
      return [route, fn] as const
    })
    this.functions = Object.fromEntries(
      entries.map(([route, fn]) => [route.operationId, fn]),
    ) as Record<OperationId, PetstoreFunction>

    const authorizer = new TokenAuthorizer(this, 'ApiKeyAuthorizer', {
      authorizerName: `petstore-${stage}-api-key`,
      handler: this.authorizerFunction.function,
      identitySource: 'method.request.header.Authorization',
      // The cache key is the Authorization header; the policy covers the whole stage, so one
      // decision serves every route. 0 turns caching off.
      resultsCacheTtl: Duration.seconds(config.authorizerCacheTtlSeconds),
    })

    this.accessLogGroup = new LogGroup(this, 'AccessLogs', {
      logGroupName: `/petstore/${stage}/api-access`,
      retention: config.logRetention,
      removalPolicy: logRemovalPolicy,
    })

    this.api = new RestApi(this, 'RestApi', {
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
        accessLogDestination: new LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: AccessLogFormat.custom(
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
            // The key's id and plan from the authorizer: never the key itself.
            keyId: AccessLogField.contextAuthorizerPrincipalId(),
            plan: AccessLogField.contextAuthorizer('plan'),
            xrayTraceId: AccessLogField.contextXrayTraceId(),
          }),
        ),
      },
      defaultMethodOptions: {
        authorizer,
        authorizationType: AuthorizationType.CUSTOM,
        apiKeyRequired: true,
      },
    })

    for (const [route, fn] of entries) {
      resourceAt(this.api.root, `${API_VERSION_PATH}${route.path}`).addMethod(
        route.method,
        // Test invocations from the console would need a second, unscoped invoke permission.
        new LambdaIntegration(fn.function, { allowTestInvoke: false }),
        { operationName: route.operationId },
      )
    }

    for (const response of GATEWAY_RESPONSES) {
      this.api.addGatewayResponse(`GatewayResponse${response.type}`, {
        type: ResponseType.of(response.type),
        statusCode: String(ERROR_STATUS[response.code]),
        responseHeaders: Object.fromEntries(
          Object.entries(response.headers ?? {}).map(([name, value]) => [
            name,
            gatewayHeaderValue(value),
          ]),
        ),
        templates: { 'application/json': gatewayResponseBody(response.code) },
      })
    }

    const usagePlans: Partial<Record<PlanName, UsagePlan>> = {}
    for (const spec of usagePlanSpecs(stage, config.enterpriseLimits)) {
      const usagePlan = this.api.addUsagePlan(`UsagePlan-${spec.plan}`, {
        name: spec.name,
        description: spec.description,
        throttle: spec.throttle,
        quota: { limit: spec.dailyQuota, period: Period.DAY },
        apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
      })
      // The authorizer's key store knows a key's plan by this tag (a key attached to an untagged
      // plan of the stage counts as a custom Enterprise plan).
      Tags.of(usagePlan).add(USAGE_PLAN_TAG, spec.plan)
      usagePlans[spec.plan] = usagePlan
    }
    this.usagePlans = usagePlans as Record<PlanName, UsagePlan>

    this.domain = undefined
    this.baseUrl = `${this.api.url}${API_VERSION_PATH.slice(1)}`
    if (config.customDomain) {
      const { domainName, certificateArn, hostedZoneId, hostedZoneName } = config.customDomain
      // Mapped at the domain root, so the base address is https://{domain}/v1.
      this.domain = this.api.addDomainName('CustomDomain', {
        domainName,
        certificate: Certificate.fromCertificateArn(this, 'Certificate', certificateArn),
        endpointType: EndpointType.REGIONAL,
        securityPolicy: SecurityPolicy.TLS_1_2,
      })
      if (hostedZoneId && hostedZoneName) {
        new ARecord(this, 'DomainAlias', {
          zone: HostedZone.fromHostedZoneAttributes(this, 'HostedZone', {
            hostedZoneId,
            zoneName: hostedZoneName,
          }),
          recordName: domainName,
          target: RecordTarget.fromAlias(new ApiGatewayDomain(this.domain)),
        })
      }
      this.baseUrl = `https://${domainName}${API_VERSION_PATH}`
    }

    this.acknowledgeRules()
  }

  /** cdk-nag findings this design accepts on purpose, each with its reason. */
  private acknowledgeRules(): void {
    Validations.of(this.api).acknowledge(
      {
        id: 'AwsSolutions-APIG2',
        reason:
          'Requests are validated in the functions against the shared zod schemas, so every 400 carries the documented validation_failed body with a details list; a gateway request validator would answer in a different shape.',
      },
      {
        id: 'AwsSolutions-APIG3',
        reason:
          'Abuse is bounded per key by usage plans, the functions rate limiter and the stage throttle; every method requires an API key. A WAF web ACL can be associated with the stage later without code changes.',
      },
      {
        id: 'AwsSolutions-COG4',
        reason:
          'Clients are machines holding API keys (decisions.md): every method uses the TOKEN Lambda authorizer, which validates the bearer key against API Gateway keys and usage plans. There are no Cognito users.',
      },
    )
    if (this.api.node.tryFindChild('CloudWatchRole')) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-level API Gateway logging role uses the AWS-managed policy documented for it; it is assumed only by apigateway.amazonaws.com to write access and execution logs.',
      })
    }
  }
}
