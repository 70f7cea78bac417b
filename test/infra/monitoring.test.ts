import type { Template } from 'aws-cdk-lib/assertions'
import { beforeAll, describe, expect, it } from 'vitest'
import { ROUTES } from '#shared/config/routes-config.ts'
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
import {
  type CfnResource,
  functionByService,
  propsOf,
  resourcesOf,
  type SynthesizedApp,
  synthesizeApp,
} from './support/synth-app.ts'

interface MetricStat {
  Metric: {
    Namespace: string
    MetricName: string
    Dimensions: { Name: string; Value: unknown }[]
  }
  Stat: string
}
interface AlarmProps {
  MetricName?: string
  Namespace?: string
  Statistic?: string
  Dimensions?: { Name: string; Value: unknown }[]
  Metrics?: { Id: string; Expression?: string; MetricStat?: MetricStat }[]
  Threshold: number
  Period?: number
  ComparisonOperator: string
  EvaluationPeriods: number
  DatapointsToAlarm?: number
  TreatMissingData?: string
  AlarmActions: unknown[]
  OKActions: unknown[]
}

let synthesized: SynthesizedApp
let production: Template
beforeAll(() => {
  synthesized = synthesizeApp(
    // An extra, unbundled synthesis: only this file needs an alarm email.
    { 'production.alarmEmail': 'oncall@example.com' },
  )
  production = synthesized.stage('production').api
})

const alarmsOf = (template: Template): AlarmProps[] =>
  resourcesOf(template, 'AWS::CloudWatch::Alarm').map(([, alarm]) => propsOf(alarm) as never)

/** The metrics an alarm reads, as "Namespace/MetricName" (math expressions: every input). */
const metricNamesOf = (alarm: AlarmProps): string[] =>
  alarm.MetricName
    ? [`${alarm.Namespace}/${alarm.MetricName}`]
    : (alarm.Metrics ?? []).flatMap((metric) =>
        metric.MetricStat
          ? [`${metric.MetricStat.Metric.Namespace}/${metric.MetricStat.Metric.MetricName}`]
          : [],
      )

/** The stage alarm reading `metric` (the rollout gates, which carry a version, are not). */
const findAlarm = (template: Template, metric: string): AlarmProps => {
  const alarm = alarmsOf(template).find(
    (candidate) =>
      metricNamesOf(candidate).includes(metric) && !JSON.stringify(candidate).includes('Version'),
  )
  expect(alarm, metric).toBeDefined()
  return alarm as AlarmProps
}

describe('alarms', () => {
  it('watches the 5xx rate of the stage', () => {
    const alarm = findAlarm(production, 'AWS/ApiGateway/5XXError')
    const [[stageId]] = resourcesOf(production, 'AWS::ApiGateway::Stage') as [[string, CfnResource]]
    // Average of 0/1 per response: the share of 5xx responses.
    expect(alarm).toMatchObject({ Statistic: 'Average', Threshold: 0.05 })
    expect(alarm.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: 'ApiName', Value: 'petstore-production' },
        { Name: 'Stage', Value: { Ref: stageId } },
      ]),
    )
  })

  it('watches authorizer failures (not rejected keys) in the stage namespace', () => {
    const alarm = findAlarm(production, `Petstore/production/${AUTHORIZER_METRICS.failed}`)
    expect(alarm).toMatchObject({ Statistic: 'Sum', Threshold: 1 })
    expect(alarm.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: 'service', Value: METRICS_SERVICE },
        { Name: OPERATION_DIMENSION, Value: AUTHORIZER_OPERATION },
      ]),
    )
    // Staging metrics live in their own namespace: they can never trip production alarms.
    findAlarm(synthesized.stage('staging').api, `Petstore/staging/${AUTHORIZER_METRICS.failed}`)
  })

  it('alarms on a surge of refused keys (forged keys), never on a client with one wrong key', () => {
    const alarm = findAlarm(production, `Petstore/production/${AUTHORIZER_METRICS.denied}`)
    expect(alarm).toMatchObject({
      Statistic: 'Sum',
      Period: 60,
      Threshold: 1_000,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'notBreaching',
    })
    expect(alarm.Dimensions).toEqual(
      expect.arrayContaining([{ Name: OPERATION_DIMENSION, Value: AUTHORIZER_OPERATION }]),
    )
    expect(alarm.AlarmActions).toHaveLength(1)
  })

  it('watches Lambda throttles of every function, the authorizer included', () => {
    const alarm = findAlarm(production, 'AWS/Lambda/Throttles')
    expect(metricNamesOf(alarm)).toHaveLength(ROUTES.length + 1)
    expect(alarm.Threshold).toBe(1)
    // Not the key sync: it is off the request path, and a late run is what its own alarm sees.
    const [syncId] = functionByService(production, KEY_SYNC_OPERATION)
    expect(JSON.stringify(alarm.Metrics)).not.toContain(syncId)
  })

  const keySyncDimensions = [
    { Name: 'service', Value: METRICS_SERVICE },
    { Name: OPERATION_DIMENSION, Value: KEY_SYNC_OPERATION },
  ]

  it('alarms when no key sync succeeded for 5 minutes, missing data included', () => {
    const alarm = findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.succeeded}`)
    expect(alarm).toMatchObject({
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'breaching',
    })
    expect(alarm.Dimensions).toEqual(expect.arrayContaining(keySyncDimensions))
  })

  it('alarms at once when the key sync holds a mass removal', () => {
    const alarm = findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.removalsHeld}`)
    expect(alarm).toMatchObject({
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    })
  })

  it('alarms within a minute when a plan with mirrored keys loses its tags or its stage', () => {
    const alarm = findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.plansLost}`)
    expect(alarm).toMatchObject({
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    })
    expect(alarm.Dimensions).toEqual(expect.arrayContaining(keySyncDimensions))
  })

  it('alarms when no run has read every plan for 15 minutes', () => {
    expect(
      findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.rotationAge}`),
    ).toMatchObject({ Statistic: 'Minimum', Period: 300, Threshold: 900 })
  })

  it('alarms on 10 or more keys removed within 5 minutes, and on failed cache flushes', () => {
    expect(
      findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.keysRemoved}`),
    ).toMatchObject({ Statistic: 'Sum', Period: 300, Threshold: 10 })
    expect(
      findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.cacheFlushFailures}`),
    ).toMatchObject({ Statistic: 'Sum', Threshold: 1 })
  })

  it("no longer alarms on the key sync's Lambda Errors alone", () => {
    const [syncId] = functionByService(production, KEY_SYNC_OPERATION)
    const onSyncErrors = alarmsOf(production).filter(
      (alarm) => alarm.MetricName === 'Errors' && JSON.stringify(alarm.Dimensions).includes(syncId),
    )
    expect(onSyncErrors).toEqual([])
  })

  it('watches usage plans refused for a missing or bad tag', () => {
    const alarm = findAlarm(production, `Petstore/production/${KEY_SYNC_METRICS.invalidPlans}`)
    expect(alarm).toMatchObject({
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    })
    expect(alarm.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: 'service', Value: METRICS_SERVICE },
        { Name: OPERATION_DIMENSION, Value: KEY_SYNC_OPERATION },
      ]),
    )
  })

  /** The `operation` dimensions of the metrics an alarm's math sums, sorted. */
  const operationsWatchedBy = (alarm: ReturnType<typeof findAlarm>) =>
    (alarm.Metrics ?? [])
      .flatMap((metric) =>
        (metric.MetricStat?.Metric.Dimensions ?? [])
          .filter(({ Name }) => Name === OPERATION_DIMENSION)
          .map(({ Value }) => Value),
      )
      .sort()

  it('watches rate limiter store failures of every operation', () => {
    const alarm = findAlarm(production, `Petstore/production/${STORE_FAILURE_METRIC}`)
    expect(operationsWatchedBy(alarm)).toEqual(ROUTES.map((route) => route.operationId).sort())
    expect(alarm).toMatchObject({ Threshold: 1, EvaluationPeriods: 5, DatapointsToAlarm: 3 })
  })

  it('alarms at once on rate limiter configuration failures (503s) of every operation', () => {
    const alarm = findAlarm(production, `Petstore/production/${CONFIG_FAILURE_METRIC}`)
    expect(operationsWatchedBy(alarm)).toEqual(ROUTES.map((route) => route.operationId).sort())
    expect(alarm).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 })
  })

  it('watches DynamoDB throttles on every table', () => {
    const tableAlarms = alarmsOf(production).filter((alarm) =>
      metricNamesOf(alarm).includes('AWS/DynamoDB/ThrottledRequests'),
    )
    const tables = tableAlarms.map((alarm) =>
      JSON.stringify(alarm.Metrics?.[1]?.MetricStat?.Metric.Dimensions),
    )
    expect(tables).toHaveLength(5)
    for (const table of [
      'IdempotencyTable',
      'PetTable',
      'RateLimitTable',
      'KeyMirrorTable',
      'StoreKeyTable',
    ]) {
      expect(tables).toContainEqual(expect.stringContaining(table))
    }
  })

  it('notifies the stage topic on alarm and on recovery', () => {
    const [[topicId]] = resourcesOf(production, 'AWS::SNS::Topic') as [[string, CfnResource]]
    const alarms = alarmsOf(production)
    // 19 stage alarms (a throttle alarm per table: five), the automatic block's 2 and, in
    // production, the rollout gates: 2 per operation, 1 for the authorizer.
    expect(alarms).toHaveLength(19 + 2 + 2 * ROUTES.length + 1)
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual([{ Ref: topicId }])
      expect(alarm.OKActions).toEqual([{ Ref: topicId }])
    }
  })
})

describe('alarm notifications', () => {
  it('subscribes the alarm email when the context sets one', () => {
    const subscriptions = resourcesOf(production, 'AWS::SNS::Subscription')
    expect(subscriptions.map(([, subscription]) => propsOf(subscription))).toEqual([
      expect.objectContaining({ Protocol: 'email', Endpoint: 'oncall@example.com' }),
    ])
    expect(resourcesOf(synthesized.stage('staging').api, 'AWS::SNS::Subscription')).toHaveLength(0)
  })

  it('accepts only TLS publishers on the topic', () => {
    const [[, policy]] = resourcesOf(production, 'AWS::SNS::TopicPolicy') as [[string, CfnResource]]
    expect(JSON.stringify(propsOf(policy))).toContain('"aws:SecureTransport":"false"')
  })
})

describe('dashboard', () => {
  it('has one per stage with API, function, authorizer and throttle graphs', () => {
    const [[, dashboard]] = resourcesOf(production, 'AWS::CloudWatch::Dashboard') as [
      [string, CfnResource],
    ]
    expect(propsOf(dashboard).DashboardName).toBe('petstore-production')
    const body = JSON.stringify(propsOf(dashboard).DashboardBody)
    for (const title of [
      'API requests and errors',
      'API latency (ms)',
      'Lambda errors',
      'Authorizer outcomes',
      'Throttles',
      'Key sync',
      'Rate limiter store failures',
      'Alarms',
    ]) {
      expect(body).toContain(title)
    }
  })
})

describe('tracing', () => {
  it('traces the stage and every function with X-Ray', () => {
    const [[, stage]] = resourcesOf(production, 'AWS::ApiGateway::Stage') as [[string, CfnResource]]
    expect(propsOf(stage)).toMatchObject({ TracingEnabled: true })
    const functions = resourcesOf(production, 'AWS::Lambda::Function')
    // The operations, the authorizer, the key sync and the automatic block.
    expect(functions).toHaveLength(ROUTES.length + 3)
    for (const [, fn] of functions) {
      expect(propsOf(fn).TracingConfig).toEqual({ Mode: 'Active' })
    }
  })
})
