import { Duration } from 'aws-cdk-lib'
import type { RestApi } from 'aws-cdk-lib/aws-apigateway'
import {
  Alarm,
  AlarmStatusWidget,
  type CfnDashboard,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { IFunction } from 'aws-cdk-lib/aws-lambda'
import { Topic } from 'aws-cdk-lib/aws-sns'
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions'
import { Construct } from 'constructs'
import { ignoreCfnLintRules } from '#infra/config/cfn-lint-config.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import {
  AUTHORIZER_METRICS,
  AUTHORIZER_OPERATION,
  KEY_SYNC_METRICS,
  KEY_SYNC_OPERATION,
  METRICS_SERVICE,
  OPERATION_DIMENSION,
} from '#shared/observability/metrics.ts'
import {
  CONFIG_FAILURE_METRIC,
  STORE_FAILURE_METRIC,
} from '#shared/rate-limit/rate-limit-middleware.ts'
import { TABLE_ACTIONS } from './petstore-function-construct.ts'

// The stage's dashboard and alarms: functions, tables, limiter and key sync.

export interface MonitoredFunction {
  name: string
  function: IFunction
}

export interface MonitoredTable {
  name: string
  table: ITable
}

export interface PetstoreMonitoringProps {
  stage: StageName
  metricsNamespace: string
  api: RestApi
  /** Every function on the request path, the authorizer included. */
  functions: readonly MonitoredFunction[]
  /** The operations whose functions run the rate limiter (their `operation` dimension). */
  rateLimitedOperations: readonly string[]
  /** The key sync, apart from `functions`: it is not on the request path. */
  keySyncFunction: IFunction
  tables: readonly MonitoredTable[]
  alarmEmail?: string
}

const ONE_MINUTE = Duration.minutes(1)

/** Removed keys in 5 minutes that alarm: far above day-to-day revocations, far below a stage. */
const KEYS_REMOVED_ALARM_THRESHOLD = 10
/**
 * A rotation through every plan takes about 5 minutes at 1,000 plans (docs/capacity.md): three
 * times that without one is a sync that no longer gets round.
 */
const ROTATION_AGE_ALARM_MINUTES = 15
const FIVE_MINUTES = Duration.minutes(5)

/** Every DynamoDB operation a table access level can grant (see TABLE_ACTIONS), used or not yet. */
const TABLE_OPERATIONS = TABLE_ACTIONS.map((action) => action.replace('dynamodb:', ''))

/** The metrics the alarms and the dashboard watch: the stage's, the functions' own, sums of them. */
const monitoringMetrics = (props: PetstoreMonitoringProps) => {
  const { api } = props
  const stageMetric = (metricName: string, statistic: string): Metric =>
    new Metric({
      namespace: 'AWS/ApiGateway',
      metricName,
      dimensionsMap: { ApiName: api.restApiName, Stage: api.deploymentStage.stageName },
      statistic,
      period: Duration.minutes(1),
    })
  // The functions' own metrics (shared/observability/metrics.ts): {service, operation}.
  const operationMetric = (operation: string, metricName: string, period = FIVE_MINUTES) =>
    new Metric({
      namespace: props.metricsNamespace,
      metricName,
      dimensionsMap: { service: METRICS_SERVICE, [OPERATION_DIMENSION]: operation },
      statistic: 'Sum',
      period,
    })
  const authorizerMetric = (metricName: string): Metric =>
    operationMetric(AUTHORIZER_OPERATION, metricName)
  const keySyncMetric = (metricName: string): Metric =>
    operationMetric(KEY_SYNC_OPERATION, metricName)
  // Ids are unique per expression so several sums can share one graph.
  const sumOf = (
    label: string,
    idPrefix: string,
    metrics: IMetric[],
    period = FIVE_MINUTES,
  ): MathExpression =>
    new MathExpression({
      label,
      period,
      expression: metrics.map((_, index) => `${idPrefix}${index}`).join(' + '),
      usingMetrics: Object.fromEntries(
        metrics.map((metric, index) => [`${idPrefix}${index}`, metric]),
      ),
    })

  const serverErrorRate = stageMetric('5XXError', 'Average')
  const lambdaThrottles = sumOf(
    'Lambda throttles',
    'lambda',
    props.functions.map(({ function: fn }) => fn.metricThrottles({ period: FIVE_MINUTES })),
  )
  const tableThrottles = props.tables.map(({ name, table }) => ({
    name,
    metric: sumOf(
      `${name} table throttles`,
      name.toLowerCase(),
      TABLE_OPERATIONS.map((operation) =>
        table.metric('ThrottledRequests', {
          dimensionsMap: { TableName: table.tableName, Operation: operation },
          statistic: 'Sum',
          period: FIVE_MINUTES,
        }),
      ),
    ),
  }))

  const keySyncErrors = props.keySyncFunction.metricErrors({ period: ONE_MINUTE })
  /** A limiter metric summed over every operation that runs the limiter, per minute. */
  const limiterSum = (label: string, id: string, metric: string) =>
    sumOf(
      label,
      id,
      props.rateLimitedOperations.map((operation) =>
        operationMetric(operation, metric, ONE_MINUTE),
      ),
      ONE_MINUTE,
    )
  const storeFailures = limiterSum(
    'Rate limiter store failures',
    'storefailures',
    STORE_FAILURE_METRIC,
  )
  const configFailures = limiterSum(
    'Rate limiter configuration failures',
    'configfailures',
    CONFIG_FAILURE_METRIC,
  )

  return {
    stageMetric,
    authorizerMetric,
    keySyncMetric,
    serverErrorRate,
    lambdaThrottles,
    tableThrottles,
    keySyncErrors,
    storeFailures,
    configFailures,
  }
}

type MonitoringMetrics = ReturnType<typeof monitoringMetrics>

/**
 * Refused keys a minute past which the stage is being sprayed with forged keys, not misused by a
 * client: API Gateway caches a refusal per header value for the authorizer's TTL, so a client
 * repeating one wrong key costs one refusal per TTL, and a thousand distinct wrong values a
 * minute is a flood (each costs an invocation and a read: docs/operations.md, "Edge rules").
 */
export const DENIED_KEYS_SURGE_PER_MINUTE = 1_000

/** An alarm on the first occurrence: 1 or more in one period of `metric`, no data is fine. */
const alarmOnFirst = (
  scope: Construct,
  id: string,
  alarmDescription: string,
  metric: IMetric,
): Alarm =>
  new Alarm(scope, id, {
    alarmDescription,
    metric,
    threshold: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  })

/** The key sync's alarms: a stale, held, unread, lost, slow or destructive sync. */
const keySyncAlarms = (
  scope: Construct,
  stage: StageName,
  { keySyncMetric }: MonitoringMetrics,
) => [
  new Alarm(scope, 'KeySyncStaleAlarm', {
    alarmDescription: `Petstore ${stage}: no key sync succeeded in the last 5 minutes (failing, or no longer running). The authorizer keeps the last good key mirror: new keys are not accepted, and revoked or detached keys keep working. See /petstore/${stage}/key-sync.`,
    metric: keySyncMetric(KEY_SYNC_METRICS.succeeded),
    threshold: 1,
    comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
    evaluationPeriods: 1,
    // No data is the symptom: a schedule that stopped publishes nothing.
    treatMissingData: TreatMissingData.BREACHING,
  }),
  alarmOnFirst(
    scope,
    'KeySyncRemovalsHeldAlarm',
    `Petstore ${stage}: the key sync withheld a removal of keys: more than half of the stage's keys, all or most keys of a plan, or the keys of a plan that lost its tags or its stage. A plan's or the mirror's mass removal applies once runs spanning 5 minutes agree; the keys of a plan that lost its tags or its stage wait for an operator however long (API Gateway refuses them meanwhile if the plan really left the stage). See them with npm run keys -- --stage ${stage} held and apply them with npm run keys -- --stage ${stage} confirm <plan id> (docs/operations.md#key-sync-guard).`,
    keySyncMetric(KEY_SYNC_METRICS.removalsHeld).with({
      statistic: 'Maximum',
      period: ONE_MINUTE,
    }),
  ),
  alarmOnFirst(
    scope,
    'KeySyncUnreadPlansAlarm',
    `Petstore ${stage}: the key sync could not read the keys of a usage plan of the stage (throttled, denied, or a broken listing): that plan's keys stay as they were (revocations on it wait; other plans sync), and the rotation retries it with a backoff. The /petstore/${stage}/key-sync log line "Usage plan could not be read" names the plan and the error (docs/operations.md#a-plan-that-cannot-be-read).`,
    keySyncMetric(KEY_SYNC_METRICS.unreadPlans).with({
      statistic: 'Maximum',
      period: ONE_MINUTE,
    }),
  ),
  alarmOnFirst(
    scope,
    'KeySyncPlansLostAlarm',
    `Petstore ${stage}: a usage plan that has keys in the key mirror is no longer a valid plan of the stage (its petstore:plan tags were removed or mistyped, it was detached from the stage or deleted, or a read of API Gateway missed it). Its keys are held, not removed; the /petstore/${stage}/key-sync log names the plan.`,
    keySyncMetric(KEY_SYNC_METRICS.plansLost).with({
      statistic: 'Maximum',
      period: ONE_MINUTE,
    }),
  ),
  new Alarm(scope, 'KeySyncRotationAgeAlarm', {
    alarmDescription: `Petstore ${stage}: no key sync has read every usage plan of the stage for ${ROTATION_AGE_ALARM_MINUTES} minutes. Changes named by management events still apply; a change no event announced waits for the rotation. See /petstore/${stage}/key-sync.`,
    metric: keySyncMetric(KEY_SYNC_METRICS.rotationAge).with({
      statistic: 'Minimum',
      period: FIVE_MINUTES,
    }),
    threshold: ROTATION_AGE_ALARM_MINUTES * 60,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  }),
  new Alarm(scope, 'KeySyncKeysRemovedAlarm', {
    alarmDescription: `Petstore ${stage}: the key sync removed ${KEYS_REMOVED_ALARM_THRESHOLD} or more keys from the mirror within 5 minutes: those keys now get 401. Check that the removal was intended.`,
    metric: keySyncMetric(KEY_SYNC_METRICS.keysRemoved),
    threshold: KEYS_REMOVED_ALARM_THRESHOLD,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  }),
  alarmOnFirst(
    scope,
    'KeySyncCacheFlushFailuresAlarm',
    `Petstore ${stage}: the key sync could not flush the stage's authorizer cache after changing the mirror, so cached decisions may outlive a key change by up to the cache TTL. Each run retries.`,
    keySyncMetric(KEY_SYNC_METRICS.cacheFlushFailures),
  ),
  new Alarm(scope, 'KeySyncInvalidPlansAlarm', {
    alarmDescription: `Petstore ${stage}: a usage plan of the stage has a missing or invalid petstore:plan, petstore:perMinute or petstore:perDay tag, so its keys are refused (401). The key-sync log names the plan.`,
    metric: keySyncMetric(KEY_SYNC_METRICS.invalidPlans),
    threshold: 0,
    comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  }),
]

/** One dashboard per stage: requests, latency, functions, authorizer, throttles, key sync, alarms. */
const addDashboard = (
  scope: PetstoreMonitoring,
  props: PetstoreMonitoringProps,
  m: MonitoringMetrics,
): Dashboard => {
  const { stage } = props
  const { stageMetric, authorizerMetric, keySyncMetric, lambdaThrottles, tableThrottles } = m
  const { keySyncErrors, storeFailures, configFailures } = m
  const dashboard = new Dashboard(scope, 'Dashboard', {
    dashboardName: `petstore-${stage}`,
    defaultInterval: Duration.hours(3),
  })
  ignoreCfnLintRules(dashboard.node.defaultChild as CfnDashboard, {
    E3002:
      "cfn-lint's schema for AWS::CloudWatch::Dashboard lacks Tags, which CloudFormation accepts: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudwatch-dashboard.html (aws-cdk-lib renders them since 2.257.0).",
  })
  const perFunction = (title: string, metricOf: (fn: IFunction) => Metric): GraphWidget =>
    new GraphWidget({
      title,
      width: 12,
      left: props.functions.map(({ name, function: fn }) => metricOf(fn).with({ label: name })),
    })
  dashboard.addWidgets(
    new GraphWidget({
      title: 'API requests and errors',
      width: 12,
      left: [
        stageMetric('Count', 'Sum').with({ label: 'requests' }),
        stageMetric('4XXError', 'Sum').with({ label: '4xx' }),
        stageMetric('5XXError', 'Sum').with({ label: '5xx' }),
      ],
    }),
    new GraphWidget({
      title: 'API latency (ms)',
      width: 12,
      left: [
        stageMetric('Latency', 'p50').with({ label: 'p50' }),
        stageMetric('Latency', 'p99').with({ label: 'p99' }),
        stageMetric('IntegrationLatency', 'p99').with({ label: 'integration p99' }),
      ],
    }),
  )
  dashboard.addWidgets(
    perFunction('Lambda errors', (fn) => fn.metricErrors({ period: FIVE_MINUTES })),
    perFunction('Lambda duration p99 (ms)', (fn) =>
      fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p99' }),
    ),
  )
  dashboard.addWidgets(
    new GraphWidget({
      title: 'Authorizer outcomes',
      width: 12,
      left: Object.values(AUTHORIZER_METRICS).map((name) => authorizerMetric(name)),
    }),
    new GraphWidget({
      title: 'Throttles',
      width: 12,
      left: [lambdaThrottles, ...tableThrottles.map(({ metric }) => metric)],
    }),
  )
  dashboard.addWidgets(
    new GraphWidget({
      title: 'Key sync',
      width: 12,
      left: [
        keySyncErrors.with({ label: 'Lambda errors', period: FIVE_MINUTES }),
        ...[
          KEY_SYNC_METRICS.succeeded,
          KEY_SYNC_METRICS.failures,
          KEY_SYNC_METRICS.invalidPlans,
          KEY_SYNC_METRICS.plansLost,
          KEY_SYNC_METRICS.refusedKeys,
          KEY_SYNC_METRICS.removalsHeld,
          KEY_SYNC_METRICS.cacheFlushFailures,
        ].map((name) => keySyncMetric(name)),
      ],
      right: [
        // A run's count, not a sum over runs.
        keySyncMetric(KEY_SYNC_METRICS.keysMirrored).with({ statistic: 'Maximum' }),
        keySyncMetric(KEY_SYNC_METRICS.keysRemoved),
        keySyncMetric(KEY_SYNC_METRICS.managementCalls),
      ],
    }),
    new GraphWidget({
      title: 'Rate limiter store failures',
      width: 12,
      left: [storeFailures, configFailures],
    }),
  )
  dashboard.addWidgets(new AlarmStatusWidget({ title: 'Alarms', width: 24, alarms: scope.alarms }))
  return dashboard
}

/**
 * Alarms on what an on-call person can act on — the API's 5xx rate, authorizer failures (it
 * cannot read the key mirror), a failing key sync, usage plans refused for a bad tag, rate
 * limiter store failures, Lambda throttles and DynamoDB throttles — sent to an SNS topic (and an
 * email address when configured), plus one dashboard per stage.
 */
export class PetstoreMonitoring extends Construct {
  readonly topic: Topic
  readonly alarms: Alarm[]
  /** The API's 5xx rate, all operations and versions together. */
  readonly serverErrorRateAlarm: Alarm
  readonly dashboard: Dashboard

  constructor(scope: Construct, id: string, props: PetstoreMonitoringProps) {
    super(scope, id)
    const { stage } = props
    this.topic = new Topic(this, 'AlarmTopic', {
      displayName: `Petstore ${stage} alarms`,
      enforceSSL: true,
    })
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail))

    const m = monitoringMetrics(props)
    const { authorizerMetric, serverErrorRate, lambdaThrottles, tableThrottles } = m
    const { storeFailures, configFailures } = m
    this.serverErrorRateAlarm = new Alarm(this, 'ServerErrorRateAlarm', {
      alarmDescription: `Petstore ${stage}: more than 5% of API responses were 5xx in 3 of the last 5 minutes.`,
      metric: serverErrorRate,
      threshold: 0.05,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    })
    this.alarms = [
      this.serverErrorRateAlarm,
      alarmOnFirst(
        this,
        'AuthorizerErrorsAlarm',
        `Petstore ${stage}: the authorizer failed (not a rejected key): it could not read the key mirror, so callers got 500s.`,
        authorizerMetric(AUTHORIZER_METRICS.failed),
      ),
      new Alarm(this, 'AuthorizerDeniedSurgeAlarm', {
        alarmDescription: `Petstore ${stage}: the authorizer refused more than ${DENIED_KEYS_SURGE_PER_MINUTE} keys a minute in 2 of the last 3 minutes: forged keys. Find the addresses in the WAF's sampled requests (rule KeyedPerAddress) and block them for a while (docs/operations.md, Support runbook).`,
        metric: m.authorizerMetric(AUTHORIZER_METRICS.denied).with({ period: Duration.minutes(1) }),
        threshold: DENIED_KEYS_SURGE_PER_MINUTE,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      ...keySyncAlarms(this, stage, m),
      new Alarm(this, 'RateLimiterStoreFailuresAlarm', {
        alarmDescription: `Petstore ${stage}: the rate limiter could not use its DynamoDB table in 3 of the last 5 minutes; requests were admitted without being counted, so plan limits were not enforced.`,
        metric: storeFailures,
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
      alarmOnFirst(
        this,
        'RateLimiterConfigFailuresAlarm',
        `Petstore ${stage}: the rate limiter's table is missing or not accessible (a deployment fault); keyed requests are answered 503 until it is fixed.`,
        configFailures,
      ),
      alarmOnFirst(
        this,
        'LambdaThrottlesAlarm',
        `Petstore ${stage}: Lambda throttled invocations (account or function concurrency exhausted).`,
        lambdaThrottles,
      ),
      ...tableThrottles.map(({ name, metric }) =>
        alarmOnFirst(
          this,
          `${name}ThrottlesAlarm`,
          `Petstore ${stage}: DynamoDB throttled requests on the ${name} table.`,
          metric,
        ),
      ),
    ]
    const action = new SnsAction(this.topic)
    for (const alarm of this.alarms) {
      alarm.addAlarmAction(action)
      alarm.addOkAction(action)
    }

    this.dashboard = addDashboard(this, props, m)
  }
}
