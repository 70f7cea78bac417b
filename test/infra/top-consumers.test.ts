import { describe, expect, it } from 'vitest'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import { appStage, type CfnResource, propsOf, resourcesOf } from './support/synth-app.ts'

/**
 * Top consumers per stage: three Contributor Insights rules on the API's access log, ranking
 * key ids (never keys) by requests, 429s and 5xx, each a graph on the stage's dashboard.
 */
type Join = { 'Fn::Join': [string, unknown[]] }

/**
 * A template string as text: Refs to known resources put back as the values they stand for, any
 * other Ref as `<Ref id>`, a GetAtt as `<GetAtt id.attribute>`, an import as `<ImportValue name>`.
 */
const resolved = (value: unknown, refs: Record<string, string> = {}): string => {
  if (typeof value === 'string') return value
  const join = (value as Join)['Fn::Join']
  if (join) return join[1].map((part) => resolved(part, refs)).join(join[0])
  const ref = (value as { Ref?: string }).Ref
  if (ref) return refs[ref] ?? `<Ref ${ref}>`
  const getAtt = (value as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']
  if (getAtt) return `<GetAtt ${getAtt[0]}.${getAtt[1]}>`
  const imported = (value as { 'Fn::ImportValue'?: string })['Fn::ImportValue']
  if (imported) return `<ImportValue ${imported}>`
  throw new Error(`Cannot resolve ${JSON.stringify(value)}`)
}

describe.each(STAGE_NAMES)('top consumers of %s', (stage) => {
  const template = appStage(stage).api
  const accessLogName = `/petstore/${stage}/api-access`
  const [accessLogId] = resourcesOf(template, 'AWS::Logs::LogGroup').find(
    ([, group]) => propsOf(group).LogGroupName === accessLogName,
  ) as [string, CfnResource]
  const rules = resourcesOf(template, 'AWS::CloudWatch::InsightRule')
  const ruleNamed = (name: string) => {
    const found = rules.find(([, rule]) => propsOf(rule).RuleName === `petstore-${stage}-${name}`)
    if (!found) throw new Error(`No rule ${name}`)
    return {
      id: found[0],
      state: propsOf(found[1]).RuleState,
      body: JSON.parse(resolved(propsOf(found[1]).RuleBody, { [accessLogId]: accessLogName })),
    }
  }
  const keyed = { Match: '$.keyId', NotIn: ['-', ''] }
  const bodyWith = (filters: object[]) => ({
    Schema: { Name: 'CloudWatchLogRule', Version: 1 },
    LogGroupNames: [accessLogName],
    LogFormat: 'JSON',
    Contribution: { Keys: ['$.keyId'], Filters: [keyed, ...filters] },
    AggregateOn: 'Count',
  })

  it('has three enabled rules on the access log, by key id: requests, 429s and 5xx', () => {
    expect(rules).toHaveLength(3)
    expect(ruleNamed('top-keys-by-requests')).toMatchObject({
      state: 'ENABLED',
      body: bodyWith([]),
    })
    expect(ruleNamed('top-keys-by-429')).toMatchObject({
      state: 'ENABLED',
      body: bodyWith([{ Match: '$.status', In: ['429'] }]),
    })
    expect(ruleNamed('top-keys-by-5xx')).toMatchObject({
      state: 'ENABLED',
      body: bodyWith([{ Match: '$.status', StartsWith: ['5'] }]),
    })
  })

  it('reads fields the access log writes: the key id and the status, as strings', () => {
    const [[, apiStage]] = resourcesOf(template, 'AWS::ApiGateway::Stage') as [
      [string, CfnResource],
    ]
    const format = (propsOf(apiStage).AccessLogSetting as { Format: string }).Format
    const line = JSON.parse(format) as Record<string, string>
    expect(line.keyId).toBe('$context.authorizer.principalId')
    expect(line.status).toBe('$context.status')
    expect(format).not.toContain('apiKey')
  })

  it("puts each rule's top 10 on the stage's dashboard", () => {
    const [[, dashboard]] = resourcesOf(template, 'AWS::CloudWatch::Dashboard') as [
      [string, CfnResource],
    ]
    const { widgets } = JSON.parse(resolved(propsOf(dashboard).DashboardBody)) as {
      widgets: {
        type: string
        properties: { title?: string; insightRule?: unknown; region?: string }
      }[]
    }
    const graphs = widgets.filter((widget) => widget.properties.insightRule !== undefined)
    expect(graphs.map(({ type, properties }) => ({ type, ...properties }))).toEqual(
      [
        ['top-keys-by-requests', 'Top keys by requests'],
        ['top-keys-by-429', 'Top keys by 429 answers'],
        ['top-keys-by-5xx', 'Top keys by 5xx answers'],
      ].map(([name, title]) =>
        expect.objectContaining({
          type: 'metric',
          title,
          region: '<Ref AWS::Region>',
          insightRule: {
            maxContributorCount: 10,
            orderBy: 'Sum',
            ruleName: `<GetAtt ${ruleNamed(name as string).id}.RuleName>`,
          },
        }),
      ),
    )
  })
})
