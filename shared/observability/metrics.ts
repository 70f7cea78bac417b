import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'

/**
 * CloudWatch metrics (embedded metric format, written to the function's log). One place for the
 * names the functions emit and the CDK alarms and dashboard read.
 *
 * Every HTTP response adds 0 or 1 to each of Http4xx, Http5xx and Http429 (429 is also a 4xx), so
 * Sum counts those responses, SampleCount counts all responses and Average is the rate. Powertools
 * adds ColdStart (once per instance, with an extra `function_name` dimension).
 */
export const DEFAULT_METRICS_NAMESPACE = 'Petstore'
/** The `service` dimension of every metric (fixed, so alarms need not know function names). */
export const METRICS_SERVICE = 'petstore'
export const OPERATION_DIMENSION = 'operation'
/** The `operation` dimension value of the authorizer's metrics. */
export const AUTHORIZER_OPERATION = 'authorizer'

export const HTTP_METRICS = {
  clientErrors: 'Http4xx',
  serverErrors: 'Http5xx',
  throttled: 'Http429',
} as const

/**
 * The dimension naming the Lambda version that answered (AWS_LAMBDA_FUNCTION_VERSION), carried by
 * the rollout metrics only: a production rollout's alarm counts the new version's own failures.
 */
export const VERSION_DIMENSION = 'functionVersion'

/**
 * Publishes 0-or-1 rollout metrics (an operation's Http5xx, the authorizer's AuthorizerErrors)
 * with {service, operation, functionVersion}: Sum counts failures, SampleCount invocations. A
 * single-metric line of its own, so only this metric gets a series per deployed version (each
 * series is a billed custom metric while it has data). One single-metric instance per function
 * instance, made at the first publish (its version is fixed for its life): a new one per
 * invocation cost about 50 µs of every warm invocation (npm run bench), reading its settings from
 * the environment and making a console of its own each time.
 */
export const perVersionPublisher = (
  metrics: Metrics,
  env: NodeJS.ProcessEnv = process.env,
): ((name: string, value: 0 | 1) => void) => {
  let single: Metrics | undefined
  return (name, value) => {
    if (!single) {
      single = metrics.singleMetric()
      // A default dimension: it stays through every publish (added ones are cleared by each).
      single.setDefaultDimensions({
        [VERSION_DIMENSION]: env.AWS_LAMBDA_FUNCTION_VERSION ?? '$LATEST',
      })
    }
    single.addMetric(name, MetricUnit.Count, value)
  }
}

export const AUTHORIZER_METRICS = {
  allowed: 'AuthorizerAllowed',
  denied: 'AuthorizerDenied',
  failed: 'AuthorizerErrors',
} as const

/**
 * A metrics instance whose every metric carries {service, operation}. The namespace comes from
 * POWERTOOLS_METRICS_NAMESPACE (the CDK sets one per stage) or defaults to "Petstore";
 * POWERTOOLS_METRICS_DISABLED=true (or POWERTOOLS_DEV=true) turns output off.
 */
export const createMetrics = (operation: string, env: NodeJS.ProcessEnv = process.env): Metrics =>
  new Metrics({
    namespace: env.POWERTOOLS_METRICS_NAMESPACE?.trim() || DEFAULT_METRICS_NAMESPACE,
    serviceName: METRICS_SERVICE,
    defaultDimensions: { [OPERATION_DIMENSION]: operation },
  })

/** The `operation` dimension value of the key-sync function's metrics. */
export const KEY_SYNC_OPERATION = 'key-sync'

/**
 * Emitted once per key-sync run. InvalidPlans > 0 means a usage plan of the stage has a missing
 * or bad `petstore:*` tag and its keys are refused (alarm on it); Failures counts runs that threw
 * and left the previous mirror in place (0 on success, so Average is the failure rate).
 */
export const KEY_SYNC_METRICS = {
  keysMirrored: 'KeySyncKeysMirrored',
  keysRemoved: 'KeySyncKeysRemoved',
  invalidPlans: 'KeySyncInvalidPlans',
  /** Plans with mirrored keys that are no longer valid plans of the stage (lost tags or stage). */
  plansLost: 'KeySyncPlansLost',
  /** Stage plans whose keys the last runs could not read (their keys stay as they were). */
  unreadPlans: 'KeySyncUnreadPlans',
  /** Seconds since the last run that read every plan of the stage. */
  rotationAge: 'KeySyncRotationAge',
  refusedKeys: 'KeySyncRefusedKeys',
  managementCalls: 'KeySyncManagementCalls',
  failures: 'KeySyncFailures',
  /** 1 per successful run: no data for 5 minutes means the mirror is going stale. */
  succeeded: 'KeySyncSucceeded',
  /** Removals the guard withheld in a run (a mass removal not yet agreed or confirmed). */
  removalsHeld: 'KeySyncRemovalsHeld',
  cacheFlushFailures: 'KeySyncCacheFlushFailures',
} as const
