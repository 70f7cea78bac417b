import { Aws, Stack } from 'aws-cdk-lib'
import { CfnInsightRule, ConcreteWidget, type Dashboard } from 'aws-cdk-lib/aws-cloudwatch'
import type { ILogGroup } from 'aws-cdk-lib/aws-logs'
import type { Construct } from 'constructs'
import type { StageName } from '#shared/config/stages-config.ts'

/**
 * Top consumers at a glance: CloudWatch Contributor Insights rules on the stage's access log
 * (rest-api-construct.ts: one JSON line per request, with the key id from the authorizer and
 * never the key), ranking key ids by requests, by 429 answers and by 5xx answers, each on the
 * stage's dashboard. The rule body follows "Contributor Insights rule syntax in CloudWatch" (AWS
 * docs): schema CloudWatchLogRule version 1, JSON log format, Contribution Keys and Filters in
 * JSON property notation, `In`/`NotIn`/`StartsWith` taking arrays of strings (the access log
 * writes `status` as a string), AggregateOn Count.
 */

/** One Contributor Insights rule over the access log. */
interface TopConsumerRule {
  id: string
  /** Joined to `petstore-<stage>-`: the rule's name in the console. */
  suffix: string
  title: string
  filters: Record<string, unknown>[]
}

export const TOP_CONSUMER_RULES: readonly TopConsumerRule[] = [
  {
    id: 'TopKeysByRequests',
    suffix: 'top-keys-by-requests',
    title: 'Top keys by requests',
    filters: [],
  },
  {
    id: 'TopKeysBy429',
    suffix: 'top-keys-by-429',
    title: 'Top keys by 429 answers',
    filters: [{ Match: '$.status', In: ['429'] }],
  },
  {
    id: 'TopKeysBy5xx',
    suffix: 'top-keys-by-5xx',
    title: 'Top keys by 5xx answers',
    filters: [{ Match: '$.status', StartsWith: ['5'] }],
  },
]

/** API Gateway writes `-` for a context variable without a value: a request no key passed. */
const WITH_KEY = { Match: '$.keyId', NotIn: ['-', ''] }

/** The rule body of one rule over one log group. */
export const topConsumerRuleBody = (logGroupName: string, rule: TopConsumerRule) => ({
  Schema: { Name: 'CloudWatchLogRule', Version: 1 },
  LogGroupNames: [logGroupName],
  LogFormat: 'JSON',
  Contribution: { Keys: ['$.keyId'], Filters: [WITH_KEY, ...rule.filters] },
  AggregateOn: 'Count',
})

/** Contributors shown per graph. */
const TOP_N = 10

/**
 * A dashboard graph of a Contributor Insights rule. aws-cdk-lib has no such widget (aws/aws-cdk
 * issue #13005): this is the metric widget the console writes for one, `properties.insightRule`
 * naming the rule (the shape of aws/aws-cdk pull request #21861's ContributorInsightsWidget).
 */
class TopContributorsWidget extends ConcreteWidget {
  readonly #title: string
  readonly #ruleName: string

  constructor({ title, ruleName, width }: { title: string; ruleName: string; width: number }) {
    super(width, 6)
    this.#title = title
    this.#ruleName = ruleName
  }

  toJson(): unknown[] {
    return [
      {
        type: 'metric',
        width: this.width,
        height: this.height,
        x: this.x,
        y: this.y,
        properties: {
          title: this.#title,
          region: Aws.REGION,
          view: 'timeSeries',
          stacked: false,
          period: 60,
          legend: { position: 'bottom' },
          insightRule: { maxContributorCount: TOP_N, orderBy: 'Sum', ruleName: this.#ruleName },
        },
      },
    ]
  }
}

/** The three rules in `scope` (ids as in TOP_CONSUMER_RULES) and a row of graphs for them. */
export const addTopConsumers = (
  scope: Construct,
  {
    stage,
    accessLogGroup,
    dashboard,
  }: { stage: StageName; accessLogGroup: ILogGroup; dashboard: Dashboard },
): CfnInsightRule[] => {
  const rules = TOP_CONSUMER_RULES.map(
    (rule) =>
      new CfnInsightRule(scope, rule.id, {
        ruleName: `petstore-${stage}-${rule.suffix}`,
        ruleState: 'ENABLED',
        ruleBody: Stack.of(scope).toJsonString(
          topConsumerRuleBody(accessLogGroup.logGroupName, rule),
        ),
      }),
  )
  dashboard.addWidgets(
    ...TOP_CONSUMER_RULES.map(
      (rule, index) =>
        new TopContributorsWidget({
          title: rule.title,
          ruleName: (rules[index] as CfnInsightRule).attrRuleName,
          width: 8,
        }),
    ),
  )
  return rules
}
