import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import type { KeyMacSecret } from '#infra/config/key-mac-config.ts'
import { metricsNamespace, type StageConfig } from '#infra/config/stage-config.ts'
import { addAddressBlockWatch } from '#infra/constructs/address-block-construct.ts'
import { addGradualDeployments } from '#infra/constructs/gradual-deployment-construct.ts'
import { PetstoreApi } from '#infra/constructs/petstore-api-construct.ts'
import { PetstoreMonitoring } from '#infra/constructs/petstore-monitoring-construct.ts'
import { addTopConsumers } from '#infra/constructs/top-consumers-construct.ts'
import { PLAN_DISPLAY_NAMES, PLAN_NAMES } from '#shared/config/plans-config.ts'
import {
  AUTHORIZER_METRICS,
  AUTHORIZER_OPERATION,
  HTTP_METRICS,
} from '#shared/observability/metrics.ts'

export interface PetstoreApiStackProps extends StackProps {
  config: StageConfig
  petTable: ITable
  rateLimitTable: ITable
  idempotencyTable: ITable
  keyMirrorTable: ITable
  storeKeyTable: ITable
  keyMacSecrets: KeyMacSecret[]
}

/** The stage's functions, REST API, usage plans, key sync, alarms and dashboard. */
export class PetstoreApiStack extends Stack {
  readonly petstoreApi: PetstoreApi
  readonly monitoring: PetstoreMonitoring

  constructor(
    scope: Construct,
    id: string,
    {
      config,
      petTable,
      rateLimitTable,
      idempotencyTable,
      keyMirrorTable,
      storeKeyTable,
      keyMacSecrets,
      ...props
    }: PetstoreApiStackProps,
  ) {
    super(scope, id, { terminationProtection: config.retainData, ...props })
    const { stage } = config
    this.petstoreApi = new PetstoreApi(this, 'Api', {
      config,
      petTable,
      rateLimitTable,
      idempotencyTable,
      keyMirrorTable,
      storeKeyTable,
      keyMacSecrets,
    })
    const { api, functions, authorizerFunction, keySyncFunction } = this.petstoreApi

    this.monitoring = new PetstoreMonitoring(this, 'Monitoring', {
      stage,
      metricsNamespace: metricsNamespace(stage),
      api,
      functions: [
        ...Object.entries(functions).map(([name, fn]) => ({ name, function: fn.function })),
        { name: AUTHORIZER_OPERATION, function: authorizerFunction.function },
      ],
      rateLimitedOperations: Object.keys(functions),
      keySyncFunction: keySyncFunction.function,
      tables: [
        { name: 'Pet', table: petTable },
        { name: 'RateLimit', table: rateLimitTable },
        { name: 'Idempotency', table: idempotencyTable },
        { name: 'KeyMirror', table: keyMirrorTable },
        { name: 'StoreKey', table: storeKeyTable },
      ],
      ...(config.alarmEmail ? { alarmEmail: config.alarmEmail } : {}),
    })

    addTopConsumers(this, {
      stage,
      accessLogGroup: this.petstoreApi.accessLogGroup,
      dashboard: this.monitoring.dashboard,
    })

    if (config.gradualDeployment) {
      addGradualDeployments(this, {
        stage,
        metricsNamespace: metricsNamespace(stage),
        functions: [
          ...Object.entries(functions).map(([name, fn]) => ({
            name,
            fn,
            failureMetric: { operation: name, metricName: HTTP_METRICS.serverErrors },
            lambdaErrorsAreFailures: true,
          })),
          {
            name: AUTHORIZER_OPERATION,
            fn: authorizerFunction,
            failureMetric: {
              operation: AUTHORIZER_OPERATION,
              metricName: AUTHORIZER_METRICS.failed,
            },
            lambdaErrorsAreFailures: false,
          },
        ],
        alarmTopic: this.monitoring.topic,
      })
    }

    if (this.petstoreApi.addressBlockFunction) {
      addAddressBlockWatch(this, config, this.petstoreApi.addressBlockFunction, this.monitoring)
    }
    this.addOutputs(config)
  }

  /** What an operator and the tools read from the stack: addresses, plan ids, names. */
  private addOutputs(config: StageConfig): void {
    const { api, keySyncFunction, usagePlans } = this.petstoreApi
    new CfnOutput(this, 'BaseUrl', {
      description: 'Base address of the API: every path is relative to it',
      value: this.petstoreApi.baseUrl,
    })
    new CfnOutput(this, 'RestApiId', { value: api.restApiId })
    new CfnOutput(this, 'StageName', { value: api.deploymentStage.stageName })
    for (const plan of PLAN_NAMES) {
      new CfnOutput(this, `${PLAN_DISPLAY_NAMES[plan]}UsagePlanId`, {
        description: `Attach ${PLAN_DISPLAY_NAMES[plan]} keys to this usage plan`,
        value: usagePlans[plan].usagePlanId,
      })
    }
    if (this.petstoreApi.domain) {
      new CfnOutput(this, 'CustomDomainTarget', {
        description: 'Point a CNAME or alias for the custom domain here',
        value: this.petstoreApi.domain.domainNameAliasDomainName,
      })
    }
    new CfnOutput(this, 'PoolUsagePlanId', { value: this.petstoreApi.pool.plan.usagePlanId })
    new CfnOutput(this, 'KeySyncFunctionName', {
      description:
        'Invoke with {"confirmRemovals": [<key ids>]}, as the key-sync log gives it, to confirm a removal the sync holds',
      value: keySyncFunction.function.functionName,
    })
    new CfnOutput(this, 'LargestPlanPerMinute', {
      description:
        'The keys CLI refuses a per-customer plan above this; the WAF per-key and per-address rules sit well above it',
      value: String(config.largestPlanPerMinute),
    })
    const blocked = this.petstoreApi.webAcl?.blockedAddresses
    if (blocked) {
      new CfnOutput(this, 'BlockedAddressesIpSet', {
        description:
          'The WAF IP set an operator adds addresses to, to refuse them for a while: name|id|scope (docs/operations.md, Support runbook)',
        value: blocked.ref,
      })
    }
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn })
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName })
  }
}
