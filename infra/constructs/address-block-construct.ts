import { CfnOutput, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib'
import { Alarm, ComparisonOperator, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import { Rule, Schedule } from 'aws-cdk-lib/aws-events'
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets'
import { PolicyStatement } from 'aws-cdk-lib/aws-iam'
import { FilterPattern, type ILogGroup, SubscriptionFilter } from 'aws-cdk-lib/aws-logs'
import { LambdaDestination } from 'aws-cdk-lib/aws-logs-destinations'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import { UNAUTHORIZED_FILTER_PATTERN } from '#functions/address-block/access-log-events.ts'
import {
  ADDRESS_BLOCK_ENV,
  ADDRESS_BLOCK_OPERATION,
} from '#functions/address-block/address-block-dependencies.ts'
import {
  ADDRESS_BLOCK_TABLE,
  addressBlockTableDefinition,
} from '#functions/address-block/address-block-repository.ts'
import { ADDRESS_BLOCK_METRICS } from '#functions/address-block/address-block-run.ts'
import { ADDRESS_BLOCK_ENTRY } from '#functions/function-entries.ts'
import { metricsNamespace, type StageConfig } from '#infra/config/stage-config.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { METRICS_SERVICE, OPERATION_DIMENSION } from '#shared/observability/metrics.ts'
import { PetstoreFunction, stageFunctionDefaults } from './petstore-function-construct.ts'
import { PetstoreTable } from './petstore-table-construct.ts'
import type { EdgeIpSets } from './web-acl-construct.ts'

// The automatic block: the access log's unauthorized answers in, the WAF's block lists out.

/** What the automatic block reads and writes: the stage's access log and its web ACL's IP sets. */
export interface AddressBlockSubjects {
  accessLogGroup: ILogGroup
  ipSets: EdgeIpSets
}

/** The schedule of the reconcile that ends blocks: EventBridge's shortest rate. */
const RECONCILE_INTERVAL = Duration.minutes(1)

/**
 * The address-block function (id `AddressBlock`, in `scope` itself: see PetstoreApi) and what
 * feeds it (docs/operations.md, "Automatic block"):
 * - a subscription filter on the access log delivers its unauthorized lines (status 401) to it;
 *   a Regional web ACL never sees responses, so the access log (status and source address) is
 *   the signal, as for the log parser of AWS's Security Automations for AWS WAF;
 * - a schedule invokes it every minute, to end blocks whose time is over;
 * - its table (counts per address and minute, the blocks) is the state, the IP sets follow it.
 * It may read and write the two automatic block lists alone (GetIPSet, UpdateIPSet), never the
 * operator's list or the web ACL. A delivery is not retried (retryAttempts 0): a run that failed
 * halfway and ran again would count its answers twice.
 */
export const addAddressBlock = (
  scope: Construct,
  config: StageConfig,
  { accessLogGroup, ipSets }: AddressBlockSubjects,
): PetstoreFunction => {
  const { stage } = config
  const table = new PetstoreTable(scope, 'AddressBlockTable', {
    definition: addressBlockTableDefinition('address-blocks'),
    // Counts of the last minutes and blocks of the last hours, each expired by TTL: nothing to
    // keep or restore (the next deliveries count again).
    removalPolicy: RemovalPolicy.DESTROY,
    deletionProtection: false,
    pointInTimeRecovery: false,
    timeToLiveAttribute: ADDRESS_BLOCK_TABLE.ttlAttribute,
  })
  Validations.of(table).acknowledge({
    id: 'AwsSolutions-DDB3',
    reason:
      'The automatic block keeps counts of the last minutes and blocks of the last hours, each expired by TTL; nothing in it needs restoring (new deliveries count again).',
  })
  const fn = new PetstoreFunction(scope, 'AddressBlock', {
    ...stageFunctionDefaults(config),
    entry: ADDRESS_BLOCK_ENTRY,
    serviceName: ADDRESS_BLOCK_OPERATION,
    description: `Petstore ${stage}: blocks an address with too many unauthorized requests for a while`,
    logGroupName: `/petstore/${stage}/address-block`,
    memorySize: 256,
    timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS.addressBlock),
    environment: {
      [ADDRESS_BLOCK_ENV.table]: table.table.tableName,
      [ADDRESS_BLOCK_ENV.ipSetV4]: ipSets.autoBlocked.ipv4.ref,
      [ADDRESS_BLOCK_ENV.ipSetV6]: ipSets.autoBlocked.ipv6.ref,
      [ADDRESS_BLOCK_ENV.unauthorizedPerMinute]: String(config.wafAutoBlockUnauthorizedPerMinute),
      [ADDRESS_BLOCK_ENV.blockMinutes]: String(config.wafAutoBlockMinutes),
      [ADDRESS_BLOCK_ENV.exempt]: config.wafExemptAddresses.join(','),
    },
  })
  fn.function.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.hours(1) })
  // Counting (UpdateItem), reading every block (Query on its partition), ending one (DeleteItem).
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
      resources: [table.table.tableArn],
    }),
  )
  fn.role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['wafv2:GetIPSet', 'wafv2:UpdateIPSet'],
      resources: [ipSets.autoBlocked.ipv4.attrArn, ipSets.autoBlocked.ipv6.attrArn],
    }),
  )
  new SubscriptionFilter(scope, 'AddressBlockSubscription', {
    logGroup: accessLogGroup,
    destination: new LambdaDestination(fn.function),
    filterPattern: FilterPattern.literal(UNAUTHORIZED_FILTER_PATTERN),
    filterName: `petstore-${stage}-unauthorized-to-address-block`,
  })
  new Rule(scope, 'AddressBlockSchedule', {
    description: `Petstore ${stage}: end automatic blocks whose time is over, every minute`,
    schedule: Schedule.rate(RECONCILE_INTERVAL),
    targets: [new LambdaFunction(fn.function, { retryAttempts: 0 })],
  })
  return fn
}

/**
 * The automatic block's alarms, in the monitoring construct and on the stage's topic: an address
 * was blocked (someone tried many keys, or a customer's egress needs `wafExemptAddresses`), and
 * the function failing to count or to write the block lists (blocks then wait for a run that
 * can); and the stack output an operator lifts a block with.
 */
export const addAddressBlockWatch = (
  stack: Construct,
  config: StageConfig,
  fn: PetstoreFunction,
  monitoring: Construct & { topic: ITopic },
): Alarm[] => {
  new CfnOutput(stack, 'AddressBlockFunctionName', {
    description:
      'Invoke with {"lift": [<addresses>]} to end automatic blocks early (docs/operations.md, Automatic block)',
    value: fn.function.functionName,
  })
  const scope = monitoring
  const topic = monitoring.topic
  const metric = (metricName: string) =>
    new Metric({
      namespace: metricsNamespace(config.stage),
      metricName,
      dimensionsMap: { service: METRICS_SERVICE, [OPERATION_DIMENSION]: ADDRESS_BLOCK_OPERATION },
      statistic: 'Sum',
      period: Duration.minutes(1),
    })
  const alarms = [
    new Alarm(scope, 'AddressBlockedAlarm', {
      alarmDescription: `Petstore ${config.stage}: an address got more than ${config.wafAutoBlockUnauthorizedPerMinute} unauthorized answers in a minute and is blocked for ${config.wafAutoBlockMinutes} minutes, valid keys from it too. The /petstore/${config.stage}/address-block log line "Address blocked automatically" names it; lift it early with the AddressBlockFunctionName output (docs/operations.md#automatic-block).`,
      metric: metric(ADDRESS_BLOCK_METRICS.newBlocks),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }),
    new Alarm(scope, 'AddressBlockFailuresAlarm', {
      alarmDescription: `Petstore ${config.stage}: the address-block function could not count unauthorized answers or write the automatic block lists in 3 of the last 5 minutes (throttled or denied by WAF, DynamoDB failing). Blocks wait for a run that can; see /petstore/${config.stage}/address-block.`,
      metric: metric(ADDRESS_BLOCK_METRICS.failures),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    }),
  ]
  const action = new SnsAction(topic)
  for (const alarm of alarms) {
    alarm.addAlarmAction(action)
    alarm.addOkAction(action)
  }
  return alarms
}
