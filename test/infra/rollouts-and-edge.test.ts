import { App, Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { RestApi } from 'aws-cdk-lib/aws-apigateway'
import { describe, expect, it } from 'vitest'
import {
  ADDRESS_BLOCK_ENV,
  ADDRESS_BLOCK_OPERATION,
} from '#functions/address-block/address-block-dependencies.ts'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { addWebAcl, WAF_BODY_INSPECTION_BYTES } from '#infra/constructs/web-acl-construct.ts'
import { BEARER_TOKEN_VALIDATION_PATTERN } from '#shared/auth/bearer-token.ts'
import { ROUTES, type RouteDefinition } from '#shared/config/routes-config.ts'
import { STAGES } from '#shared/config/stages-config.ts'
import { CORS_EXPOSED_HEADERS } from '#shared/http/cors-headers.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import {
  appStage,
  type CfnResource,
  envOf,
  functionByService,
  liveAliasIdOf,
  propsOf,
  resourcesOf,
  synthesizeApp,
} from './support/synth-app.ts'
import { statementMatches, transform, webAclEvaluator } from './support/web-acl-evaluator.ts'

/**
 * Bad deploys and the edge, as synthesized: production rolls each function out through CodeDeploy
 * (canary, rolled back by alarms), staging switches at once; both put a WAF web ACL in front of
 * the stage, whose rules are evaluated here on request streams (support/web-acl-evaluator.ts).
 * listPets alone gets the cursor key, from a secret generated at deploy time.
 */
const production = appStage('production').api
const staging = appStage('staging').api
const ROLLED_OUT = [...ROUTES.map((route) => route.operationId), 'authorizer']

const aliasIdOf = (template: typeof production, service: string): string =>
  liveAliasIdOf(template, functionByService(template, service)[0])

describe('bad deploys roll back by themselves in production', () => {
  const groups = resourcesOf(production, 'AWS::CodeDeploy::DeploymentGroup')

  it('shifts each function through a canary: 10% for 5 minutes, then the rest', () => {
    expect(groups).toHaveLength(ROLLED_OUT.length)
    for (const [, group] of groups) {
      expect(JSON.stringify(propsOf(group).DeploymentConfigName)).toContain(
        'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      )
      expect(propsOf(group).AutoRollbackConfiguration).toMatchObject({
        Enabled: true,
        Events: expect.arrayContaining(['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM']),
      })
    }
  })

  it('updates every live alias through its deployment group', () => {
    for (const service of ROLLED_OUT) {
      const aliasId = aliasIdOf(production, service)
      const alias = production.toJSON().Resources[aliasId] as CfnResource & {
        UpdatePolicy?: { CodeDeployLambdaAliasUpdate?: unknown }
      }
      expect(alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate, service).toBeDefined()
    }
  })

  /** The alarms of the deployment group that moves a function's live alias, by logical id. */
  const gateOf = (service: string) => {
    const resources = production.toJSON().Resources as Record<string, CfnResource>
    const aliasId = aliasIdOf(production, service)
    const alias = resources[aliasId] as CfnResource & {
      UpdatePolicy: { CodeDeployLambdaAliasUpdate: { DeploymentGroupName: { Ref: string } } }
      DependsOn?: string[]
    }
    const groupId = alias.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName.Ref
    const alarmIds = (
      propsOf(resources[groupId] as CfnResource).AlarmConfiguration as {
        Alarms: { Name: { Ref: string } }[]
      }
    ).Alarms.map((alarm) => alarm.Name.Ref)
    return {
      groupId,
      alias,
      alarms: alarmIds.map((id) => ({ id, props: propsOf(resources[id] as CfnResource) })),
    }
  }

  /** An alarm's metrics (single or math), each with its dimensions as an object. */
  const metricsOf = (props: Record<string, unknown>) => {
    const toDimensions = (list: { Name: string; Value: unknown }[] = []) =>
      Object.fromEntries(list.map((d) => [d.Name, d.Value]))
    if (props.Metrics) {
      return (
        props.Metrics as {
          Id: string
          Expression?: string
          MetricStat?: {
            Metric: {
              MetricName: string
              Namespace: string
              Dimensions: { Name: string; Value: unknown }[]
            }
            Stat: string
          }
        }[]
      ).map((m) => ({
        id: m.Id,
        expression: m.Expression,
        name: m.MetricStat?.Metric.MetricName,
        namespace: m.MetricStat?.Metric.Namespace,
        stat: m.MetricStat?.Stat,
        dimensions: toDimensions(m.MetricStat?.Metric.Dimensions),
      }))
    }
    return [
      {
        id: 'metric',
        expression: undefined,
        name: props.MetricName as string,
        namespace: props.Namespace as string,
        stat: props.Statistic as string,
        dimensions: toDimensions(props.Dimensions as { Name: string; Value: unknown }[]),
      },
    ]
  }

  it('gates each deployment group on its own function only, never on a stage-wide alarm', () => {
    const groupIds = groups.map(([id]) => id)
    for (const service of ROLLED_OUT) {
      const { groupId, alarms } = gateOf(service)
      expect(groupIds, service).toContain(groupId)
      expect(alarms.map(({ id }) => id).filter((id) => id.startsWith('Monitoring'))).toEqual([])
    }
  })

  it("rolls each operation back on the new version's own 5xx answers and Lambda errors", () => {
    for (const operation of ROUTES.map((route) => route.operationId)) {
      const { alias, alarms } = gateOf(operation)
      const version = propsOf(alias).FunctionVersion
      expect(alarms, operation).toHaveLength(2)
      const failures = alarms.find(({ id }) => id.includes('NewVersionFailuresAlarm'))
      const metrics = metricsOf(failures?.props ?? {})
      expect(metrics.find((m) => m.expression)?.expression).toBe(
        'IF(failures >= 3 AND failures / requests >= 0.05, 1, 0)',
      )
      for (const stat of ['Sum', 'SampleCount']) {
        expect(metrics.find((m) => m.stat === stat)).toMatchObject({
          name: 'Http5xx',
          namespace: 'Petstore/production',
          dimensions: { service: 'petstore', operation, functionVersion: version },
        })
      }
      const errors = alarms.find(({ id }) => id.includes('LiveAliasErrorsAlarm'))
      expect(errors?.props).toMatchObject({
        MetricName: 'Errors',
        Namespace: 'AWS/Lambda',
        Threshold: 1,
        TreatMissingData: 'notBreaching',
      })
      // Only the version the alias is moving to: the old one's errors (90% of the traffic during
      // the canary) must not roll back a deploy that fixes them.
      const functionRef = propsOf(alias).FunctionName
      expect(metricsOf(errors?.props ?? {})[0]?.dimensions).toEqual({
        FunctionName: functionRef,
        Resource: { 'Fn::Join': ['', [functionRef, ':live']] },
        ExecutedVersion: version,
      })
      // Both watch the new version before the alias shifts any traffic.
      for (const { id } of alarms) expect(alias.DependsOn, operation).toContain(id)
    }
  })

  it('rolls the authorizer back on its failures to decide, never on Lambda Errors (its 401s)', () => {
    const { alias, alarms } = gateOf('authorizer')
    expect(alarms).toHaveLength(1)
    const metrics = metricsOf(alarms[0]?.props ?? {})
    expect(metrics.map((m) => m.namespace)).not.toContain('AWS/Lambda')
    expect(metrics.find((m) => m.stat === 'Sum')).toMatchObject({
      name: 'AuthorizerErrors',
      dimensions: {
        service: 'petstore',
        operation: 'authorizer',
        functionVersion: propsOf(alias).FunctionVersion,
      },
    })
  })

  it('staging switches at once: no deployment groups, the alias still in front', () => {
    expect(resourcesOf(staging, 'AWS::CodeDeploy::DeploymentGroup')).toHaveLength(0)
    for (const service of ROLLED_OUT) expect(aliasIdOf(staging, service)).toBeTruthy()
  })

  it('can be switched per stage with context', () => {
    const synthesized = synthesizeApp({
      stage: 'production',
      'production.gradualDeployment': 'false',
    })
    expect(
      resourcesOf(synthesized.stage('production').api, 'AWS::CodeDeploy::DeploymentGroup'),
    ).toHaveLength(0)
  })
})

/** A stage's web ACL, its template's resources, and a fresh evaluator over them. */
const webAclOf = (template: typeof production) => {
  const [[, acl]] = resourcesOf(template, 'AWS::WAFv2::WebACL') as [[string, CfnResource]]
  const resources = template.toJSON().Resources as Record<string, CfnResource>
  return { acl, resources, evaluate: () => webAclEvaluator(acl, resources) }
}
const rulesOf = (acl: CfnResource) =>
  propsOf(acl).Rules as {
    Name: string
    Statement: Record<string, Record<string, unknown>>
    Action: { Block: { CustomResponse: Record<string, unknown> } }
  }[]
const bodiesOf = (acl: CfnResource) =>
  propsOf(acl).CustomResponseBodies as Record<string, { Content: string }>
const autoBlockListOf = (template: Template, version: 'ipv4' | 'ipv6') =>
  resourcesOf(template, 'AWS::WAFv2::IPSet').find(([, set]) =>
    String(propsOf(set).Name).endsWith(`-auto-blocked-${version}`),
  ) as [string, CfnResource]
const outputOf = (template: typeof production, name: string): string | undefined =>
  (template.toJSON().Outputs as Record<string, { Value: string }>)[name]?.Value

/** A fresh well-formed key value for each n (a random key costs more to make than to evaluate). */
const forgedKey = (n: number) => `forged${n.toString(36).padStart(34, '0')}`
const VALID_KEY_HEADER = `Bearer ${'k'.repeat(40)}`
/** Every spelling of one key's header the gateway's pattern accepts: 64 of `Bearer`, 1 to 16 spaces. */
const spellingsOf = (key: string): string[] =>
  Array.from({ length: 64 }, (_, mask) =>
    [...'bearer'].map((c, i) => (mask & (1 << i) ? c.toUpperCase() : c)).join(''),
  ).flatMap((scheme) => Array.from({ length: 16 }, (_, n) => `${scheme}${' '.repeat(n + 1)}${key}`))

describe('the WAF web ACL', () => {
  it('is on in both stages, in front of the stage', () => {
    for (const template of [production, staging]) {
      const acls = resourcesOf(template, 'AWS::WAFv2::WebACL')
      expect(acls).toHaveLength(1)
      const [[aclId]] = acls as [[string, CfnResource]]
      const [[, association]] = resourcesOf(template, 'AWS::WAFv2::WebACLAssociation') as [
        [string, CfnResource],
      ]
      expect(propsOf(association).WebACLArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] })
      expect(JSON.stringify(propsOf(association).ResourceArn)).toContain('/stages/')
    }
    const off = synthesizeApp({ stage: 'staging', 'staging.waf': 'false' }).stage('staging').api
    expect(resourcesOf(off, 'AWS::WAFv2::WebACL')).toHaveLength(0)
    // Nor the automatic block, which feeds the web ACL's block lists.
    expect(resourcesOf(off, 'AWS::WAFv2::IPSet')).toHaveLength(0)
    expect(resourcesOf(off, 'AWS::Logs::SubscriptionFilter')).toHaveLength(0)
  })

  it('answers bodies over the API limit with 413 payload_too_large before any function runs', () => {
    const { acl, evaluate } = webAclOf(production)
    const rule = rulesOf(acl).find((candidate) => candidate.Name === 'BodyOverApiLimit')
    expect(rule?.Statement.SizeConstraintStatement).toMatchObject({
      FieldToMatch: { Body: { OversizeHandling: 'MATCH' } },
      ComparisonOperator: 'GT',
      Size: MAX_BODY_BYTES,
    })
    // A body of exactly the API's limit passes: WAF sees all of it (default inspection window).
    expect(propsOf(acl).AssociationConfig).toBeUndefined()
    expect(MAX_BODY_BYTES).toBeLessThanOrEqual(WAF_BODY_INSPECTION_BYTES)
    const waf = evaluate()
    const post = { at: 0, ip: '192.0.2.1', method: 'POST', authorization: VALID_KEY_HEADER }
    expect(waf({ ...post, bodyBytes: MAX_BODY_BYTES }).blockedBy).toBeUndefined()
    expect(waf({ ...post, bodyBytes: MAX_BODY_BYTES + 1 })).toEqual({
      blockedBy: 'BodyOverApiLimit',
      status: 413,
    })
    const response = rule?.Action.Block.CustomResponse as { CustomResponseBodyKey: string }
    expect(JSON.parse(bodiesOf(acl)[response.CustomResponseBodyKey]?.Content ?? '')).toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
  })

  it('tells keyed from keyless requests by the shape of the Authorization header', () => {
    const { acl } = webAclOf(production)
    const keyless = rulesOf(acl).find((rule) => rule.Name === 'KeylessPerAddress')
    const scopeDown = keyless?.Statement.RateBasedStatement?.ScopeDownStatement as Parameters<
      typeof statementMatches
    >[0]
    const get = (authorization?: string) => ({
      at: 0,
      ip: '192.0.2.1',
      method: 'GET',
      authorization,
    })
    for (const header of [
      undefined,
      '',
      'Basic Zm9vOmJhcg==',
      'Bearer short',
      `Bearer ${'k'.repeat(200)}`,
    ]) {
      expect(statementMatches(scopeDown, get(header)), String(header)).toBe(true)
    }
    for (const header of [
      VALID_KEY_HEADER,
      `bearer  ${'k'.repeat(128)}`,
      `BEARER ${'k'.repeat(20)}`,
    ]) {
      expect(statementMatches(scopeDown, get(header)), header).toBe(false)
    }
    // A preflight is never counted, whatever it carries.
    expect(statementMatches(scopeDown, { ...get(), method: 'OPTIONS' })).toBe(false)
  })

  describe.each([
    ['production', production],
    ['staging', staging],
  ] as const)('in %s', (stage, template) => {
    const { acl } = webAclOf(template)
    const rate = (name: string) =>
      rulesOf(acl).find((rule) => rule.Name === name)?.Statement.RateBasedStatement as Record<
        string,
        unknown
      >
    const ceiling = Number(rate('KeyedPerAddress').Limit)
    const largestPlan = Number(outputOf(template, 'LargestPlanPerMinute'))
    const throttle = STAGES[stage].throttleRateLimit

    it('takes the per-address ceiling for keyed requests from the stage throttle, well above the largest plan the stage accepts', () => {
      expect(rate('KeyedPerAddress')).toMatchObject({
        AggregateKeyType: 'IP',
        EvaluationWindowSec: 60,
      })
      // Half a minute of one method's throttle: one host never holds a method's bucket.
      expect(ceiling).toBe(throttle * 30)
      // The keys CLI refuses a plan above LargestPlanPerMinute: the ceiling holds it three times.
      expect(ceiling).toBeGreaterThanOrEqual(3 * largestPlan)
      expect(largestPlan).toBeGreaterThanOrEqual(5_000)
      // The per-key rule sits above twice the largest plan over its 5 minutes.
      expect(Number(rate('RatePerKey').Limit)).toBeGreaterThanOrEqual(2 * 5 * largestPlan)
    })

    it('bounds a one-address flood of random keys at the ceiling: the rest never reaches the authorizer', () => {
      const waf = webAclOf(template).evaluate()
      // One host sending as fast as the stage throttle lets a method serve, for 40 seconds.
      const sent = throttle * 40
      let passed = 0
      const blockedBy = new Map<string | undefined, number>()
      for (let i = 0; i < sent; i += 1) {
        const verdict = waf({
          at: i / throttle,
          ip: '198.51.100.7',
          method: 'GET',
          authorization: `Bearer ${forgedKey(i)}`,
        })
        if (verdict.blockedBy === undefined) passed += 1
        else blockedBy.set(verdict.blockedBy, (blockedBy.get(verdict.blockedBy) ?? 0) + 1)
      }
      // What reaches API Gateway (an authorizer call and a key-mirror read each): the ceiling.
      expect(passed).toBe(ceiling)
      expect([...blockedBy.keys()]).toEqual(['KeyedPerAddress'])
      // Without the per-address rule, every one of them would have passed: each value is new.
      const perKeyOnly = webAclEvaluator(
        {
          ...acl,
          Properties: {
            ...propsOf(acl),
            Rules: rulesOf(acl).filter((rule) => rule.Name !== 'KeyedPerAddress'),
          },
        },
        webAclOf(template).resources,
      )
      let unbounded = 0
      for (let i = 0; i < 20_000; i += 1) {
        const verdict = perKeyOnly({
          at: i / throttle,
          ip: '198.51.100.7',
          method: 'GET',
          authorization: `Bearer ${forgedKey(i)}`,
        })
        if (verdict.blockedBy === undefined) unbounded += 1
      }
      expect(unbounded).toBe(20_000)
    })

    it('never refuses a valid key from a shared address below the ceiling, whatever its neighbours send without a key', () => {
      const waf = webAclOf(template).evaluate()
      const nat = '203.0.113.9'
      const refusedKeyed: number[] = []
      let keylessRefused = 0
      let preflightsRefused = 0
      // A minute at the NAT: the customer's browser (a preflight before each keyed request, the
      // key's largest plan three times over, minus one) and a neighbour's keyless flood.
      const keyed = ceiling - 1
      for (let i = 0; i < keyed; i += 1) {
        const at = (i / keyed) * 59
        const preflight = waf({ at, ip: nat, method: 'OPTIONS' })
        if (preflight.blockedBy) preflightsRefused += 1
        const verdict = waf({
          at,
          ip: nat,
          method: i % 2 ? 'GET' : 'POST',
          authorization: VALID_KEY_HEADER,
        })
        if (verdict.blockedBy) refusedKeyed.push(i)
        if (i % 10 === 0) {
          const flood = waf({ at, ip: nat, method: 'GET' })
          if (flood.blockedBy === 'KeylessPerAddress') keylessRefused += 1
        }
      }
      expect(refusedKeyed).toEqual([])
      expect(preflightsRefused).toBe(0)
      // The neighbour's keyless flood is refused past its own limit, and only it.
      expect(keylessRefused).toBeGreaterThan(0)
      // The ceiling-th passes; past it, the address's keyed requests are refused (with any key).
      expect(
        waf({ at: 59.5, ip: nat, method: 'GET', authorization: VALID_KEY_HEADER }).blockedBy,
      ).toBeUndefined()
      expect(waf({ at: 59.6, ip: nat, method: 'GET', authorization: VALID_KEY_HEADER })).toEqual({
        blockedBy: 'KeyedPerAddress',
        status: 429,
      })
      // Another address with the same key is not.
      expect(
        waf({ at: 59.5, ip: '192.0.2.44', method: 'GET', authorization: VALID_KEY_HEADER })
          .blockedBy,
      ).toBeUndefined()
    })

    it('counts one key in one per-key counter, whichever of its 1,024 accepted spellings it is sent in', () => {
      const key = rate('RatePerKey')
      expect(key.CustomKeys).toEqual([
        {
          Header: {
            Name: 'authorization',
            TextTransformations: [
              { Priority: 0, Type: 'LOWERCASE' },
              { Priority: 1, Type: 'COMPRESS_WHITE_SPACE' },
            ],
          },
        },
      ])
      const [header] = key.CustomKeys as { Header: { TextTransformations: { Type: string }[] } }[]
      const spellings = spellingsOf('k'.repeat(40))
      expect(spellings).toHaveLength(1_024)
      for (const spelling of spellings)
        expect(new RegExp(BEARER_TOKEN_VALIDATION_PATTERN).test(spelling)).toBe(true)
      expect(
        new Set(
          spellings.map((spelling) =>
            transform(spelling, header?.Header.TextTransformations ?? []),
          ),
        ).size,
      ).toBe(1)
      // Spread over many addresses, the spellings still add up in the one counter: with the
      // rule's limit lowered to 1,000 (its real one takes 500,000 requests to reach), the
      // 1,001st spelling is refused.
      const lowered = {
        ...acl,
        Properties: {
          ...propsOf(acl),
          Rules: rulesOf(acl).map((rule) =>
            rule.Name === 'RatePerKey'
              ? { ...rule, Statement: { RateBasedStatement: { ...key, Limit: 1_000 } } }
              : rule,
          ),
        },
      }
      const waf = webAclEvaluator(lowered, webAclOf(template).resources)
      const verdicts = spellings.map((spelling, i) =>
        waf({
          at: i / 10,
          ip: `10.0.${i >> 8}.${i & 255}`,
          method: 'GET',
          authorization: spelling,
        }),
      )
      expect(verdicts.findIndex((verdict) => verdict.blockedBy !== undefined)).toBe(1_000)
      expect(new Set(verdicts.slice(1_000).map((verdict) => verdict.blockedBy))).toEqual(
        new Set(['RatePerKey']),
      )
    })

    it('counts preflights per address at the keyed ceiling: a one-address OPTIONS flood reaches API Gateway only up to it', () => {
      expect(rate('PreflightPerAddress')).toMatchObject({
        AggregateKeyType: 'IP',
        EvaluationWindowSec: 60,
        Limit: ceiling,
      })
      // One host sending OPTIONS as fast as the stage throttle lets a method serve, for 40 s.
      const flood = (waf: ReturnType<typeof webAclEvaluator>, sent: number) => {
        const blockedBy = new Map<string | undefined, number>()
        for (let i = 0; i < sent; i += 1) {
          const verdict = waf({ at: i / throttle, ip: '198.51.100.8', method: 'OPTIONS' })
          blockedBy.set(verdict.blockedBy, (blockedBy.get(verdict.blockedBy) ?? 0) + 1)
        }
        return blockedBy
      }
      const sent = throttle * 40
      const verdicts = flood(webAclOf(template).evaluate(), sent)
      expect(verdicts.get(undefined)).toBe(ceiling)
      expect(verdicts.get('PreflightPerAddress')).toBe(sent - ceiling)
      // Without the rule, every one of them reached API Gateway (a billed mock answer each).
      const withoutRule = webAclEvaluator(
        {
          ...acl,
          Properties: {
            ...propsOf(acl),
            Rules: rulesOf(acl).filter((rule) => rule.Name !== 'PreflightPerAddress'),
          },
        },
        webAclOf(template).resources,
      )
      expect(flood(withoutRule, 20_000).get(undefined)).toBe(20_000)
    })

    it('refuses every request of an address the operator put on the block list, which starts empty', () => {
      const [[blockedId, blocked]] = resourcesOf(template, 'AWS::WAFv2::IPSet').filter(([, set]) =>
        String(propsOf(set).Name).endsWith('-blocked-addresses'),
      ) as [[string, CfnResource]]
      expect(propsOf(blocked)).toMatchObject({
        Addresses: [],
        Scope: 'REGIONAL',
        IPAddressVersion: 'IPV4',
      })
      expect(template.toJSON().Outputs.BlockedAddressesIpSet?.Value).toEqual({ Ref: blockedId })
      const resources = {
        ...webAclOf(template).resources,
        [blockedId]: {
          ...blocked,
          Properties: { ...propsOf(blocked), Addresses: ['198.51.100.0/24'] },
        },
      }
      const waf = webAclEvaluator(acl, resources)
      expect(
        waf({ at: 0, ip: '198.51.100.7', method: 'GET', authorization: VALID_KEY_HEADER }),
      ).toEqual({
        blockedBy: 'BlockedAddresses',
        status: 429,
      })
      expect(
        waf({ at: 0, ip: '198.51.101.7', method: 'GET', authorization: VALID_KEY_HEADER })
          .blockedBy,
      ).toBeUndefined()
    })
  })

  /** Staging with two known egress addresses (synthesized once, for the tests below). */
  let exemptedStage: Template | undefined
  const exemptedTemplate = () => {
    exemptedStage ??= synthesizeApp({
      stage: 'staging',
      'staging.wafExemptAddresses': '203.0.113.0/28, 192.0.2.10',
    }).stage('staging').api
    return exemptedStage
  }

  it('exempts a known egress address from the per-address ceiling, never from the per-key limit', () => {
    const exempted = exemptedTemplate()
    const [[, set]] = resourcesOf(exempted, 'AWS::WAFv2::IPSet').filter(([, candidate]) =>
      String(propsOf(candidate).Name).endsWith('-exempt-addresses'),
    ) as [[string, CfnResource]]
    expect(propsOf(set).Addresses).toEqual(['203.0.113.0/28', '192.0.2.10/32'])
    const { acl, evaluate } = webAclOf(exempted)
    const ceiling = Number(
      rulesOf(acl).find((rule) => rule.Name === 'KeyedPerAddress')?.Statement.RateBasedStatement
        ?.Limit,
    )
    expect(ceiling).toBe(30_000)
    const waf = evaluate()
    for (let i = 0; i <= ceiling; i += 1) {
      const verdict = waf({
        at: i / 10_000,
        ip: '203.0.113.5',
        method: 'GET',
        authorization: `Bearer ${forgedKey(i)}`,
      })
      expect(verdict.blockedBy).toBeUndefined()
    }
    // An address outside the set is held at the ceiling.
    const outside = Array.from({ length: ceiling + 1 }, (_, i) =>
      waf({
        at: i / 10_000,
        ip: '203.0.113.99',
        method: 'GET',
        authorization: `Bearer ${forgedKey(i)}`,
      }),
    )
    expect(outside.filter((verdict) => verdict.blockedBy === 'KeyedPerAddress')).toHaveLength(1)
    expect(() => synthesizeApp({ 'staging.wafExemptAddresses': '2001:db8::/32' })).toThrow(
      /wafExemptAddresses.*IPv4 addresses or CIDR blocks/,
    )
  })

  it('blocks IPv4 and IPv6 addresses from their own lists, and never an exempted address', () => {
    const exempted = exemptedTemplate()
    const [, exemptAcl] = resourcesOf(exempted, 'AWS::WAFv2::WebACL')[0] as [string, CfnResource]
    const resources = structuredClone(exempted.toJSON().Resources) as Record<string, CfnResource>
    const [v4Id, v4] = autoBlockListOf(exempted, 'ipv4')
    const [v6Id, v6] = autoBlockListOf(exempted, 'ipv6')
    expect(propsOf(v4)).toMatchObject({ IPAddressVersion: 'IPV4', Addresses: [] })
    expect(propsOf(v6)).toMatchObject({ IPAddressVersion: 'IPV6', Addresses: [] })
    ;(resources[v4Id] as CfnResource).Properties = {
      ...propsOf(v4),
      Addresses: ['198.51.100.7/32', '203.0.113.5/32'],
    }
    ;(resources[v6Id] as CfnResource).Properties = {
      ...propsOf(v6),
      Addresses: ['2001:db8::7/128'],
    }
    expect(envOf(functionByService(exempted, ADDRESS_BLOCK_OPERATION)[1])).toMatchObject({
      [ADDRESS_BLOCK_ENV.exempt]: '203.0.113.0/28,192.0.2.10/32',
    })
    const waf = webAclEvaluator(exemptAcl, resources)
    const from = (ip: string) =>
      waf({ at: 0, ip, method: 'GET', authorization: VALID_KEY_HEADER }).blockedBy
    expect(from('198.51.100.7')).toBe('AutoBlockedAddresses')
    expect(from('2001:db8:0:0:0:0:0:7')).toBe('AutoBlockedAddresses')
    expect(from('2001:db8::8')).toBeUndefined()
    expect(from('198.51.100.8')).toBeUndefined()
    // On the list by mistake (an exemption added since), an exempted address is not refused.
    expect(from('203.0.113.5')).toBeUndefined()
    // Preflights of a blocked address are refused too: the whole address is blocked.
    expect(waf({ at: 0, ip: '198.51.100.7', method: 'OPTIONS' }).blockedBy).toBe(
      'AutoBlockedAddresses',
    )
  })

  it("answers each rule with 429, a Retry-After and the stage's CORS headers in the API Error shape", () => {
    const expected = {
      BlockedAddresses: ['rate_limited', '300'],
      AutoBlockedAddresses: ['rate_limited', String(60 * 60)],
      KeylessPerAddress: ['too_many_failed_auths', '60'],
      PreflightPerAddress: ['rate_limited', '60'],
      KeyedPerAddress: ['rate_limited', '60'],
      RatePerKey: ['rate_limited', '60'],
    }
    // A stage with one origin: the web ACL alone, in a stack of its own (no app synthesis).
    const origin = 'https://app.example.com'
    const stack = new Stack(new App({ builtinCloudFormationValidation: false }), 'Edge')
    const api = new RestApi(stack, 'Api')
    api.root.addMethod('GET')
    addWebAcl(
      stack,
      readStageConfig((key) => ({ 'staging.corsAllowOrigin': origin })[key], 'staging'),
      api,
    )
    const withOrigin = Template.fromStack(stack)
    for (const [template, allowOrigin] of [
      [production, '*'],
      [withOrigin, origin],
    ] as const) {
      const { acl } = webAclOf(template)
      expect(rulesOf(acl).map((rule) => rule.Name)).toEqual([
        'BodyOverApiLimit',
        ...Object.keys(expected),
      ])
      const cors = [
        { Name: 'Access-Control-Allow-Origin', Value: allowOrigin },
        { Name: 'Access-Control-Expose-Headers', Value: CORS_EXPOSED_HEADERS.join(', ') },
      ]
      for (const [name, [code, retryAfter]] of Object.entries(expected)) {
        const response = rulesOf(acl).find((rule) => rule.Name === name)?.Action.Block
          .CustomResponse as {
          ResponseCode: number
          CustomResponseBodyKey: string
          ResponseHeaders: { Name: string; Value: string }[]
        }
        expect(response.ResponseCode, name).toBe(429)
        // A page reads the 429 and its Retry-After (WAF's headers are static: the configured origin).
        expect(response.ResponseHeaders).toEqual([
          ...cors,
          { Name: 'Retry-After', Value: retryAfter },
        ])
        expect(
          JSON.parse(bodiesOf(acl)[response.CustomResponseBodyKey]?.Content ?? ''),
        ).toMatchObject({ code, status: 429 })
      }
      const body = rulesOf(acl)[0]?.Action.Block.CustomResponse as {
        ResponseHeaders: unknown
      }
      expect(body.ResponseHeaders).toEqual(cors)
    }
  })

  it('follows largestPlanPerMinute within the ceiling, and refuses the old per-address setting by name', () => {
    const raised = synthesizeApp({
      stage: 'production',
      'production.largestPlanPerMinute': '50000',
    })
    expect(outputOf(raised.stage('production').api, 'LargestPlanPerMinute')).toBe('50000')
    const perKey = rulesOf(webAclOf(raised.stage('production').api).acl).find(
      (rule) => rule.Name === 'RatePerKey',
    )
    expect(perKey?.Statement.RateBasedStatement?.Limit).toBe(500_000)
    expect(() => synthesizeApp({ 'production.largestPlanPerMinute': '50001' })).toThrow(
      /largestPlanPerMinute.*at most 50000.*raise throttleRateLimit/s,
    )
    // A larger throttle makes room: 10,000/s gives 300,000 a minute per address, 100,000 a plan.
    const bigger = synthesizeApp({
      stage: 'production',
      'production.throttleRateLimit': '10000',
      'production.largestPlanPerMinute': '100000',
    })
    expect(outputOf(bigger.stage('production').api, 'LargestPlanPerMinute')).toBe('100000')
    expect(() => synthesizeApp({ 'production.wafRateLimitPer5Minutes': '50000' })).toThrow(
      /wafRateLimitPer5Minutes.*wafKeylessPer5Minutes/s,
    )
    // The automatic block's rate never below what a client of the largest plan may send.
    expect(() =>
      synthesizeApp({ 'production.wafAutoBlockUnauthorizedPerMinute': '49999' }),
    ).toThrow(/wafAutoBlockUnauthorizedPerMinute.*largestPlanPerMinute/s)
    expect(() => synthesizeApp({ 'production.wafAutoBlockMinutes': '0' })).toThrow(
      /wafAutoBlockMinutes/,
    )
  })
})

describe('the cursor key', () => {
  it('reaches the operations that page with cursors and no other function, from a secret generated at deploy time per stage', () => {
    const paging = (ROUTES as readonly RouteDefinition[]).filter((route) => route.cursors)
    // listPets pages (a statement of this API, not the rule): the rule below is not vacuous.
    expect(paging.map((route) => route.operationId)).toContain('listPets')
    for (const template of [production, staging]) {
      const [[secretId, secret]] = resourcesOf(template, 'AWS::SecretsManager::Secret') as [
        [string, CfnResource],
      ]
      expect(propsOf(secret).GenerateSecretString).toMatchObject({ PasswordLength: 64 })
      for (const service of [
        ...ROUTES.map((route) => route.operationId),
        'authorizer',
        KEY_SYNC_OPERATION,
      ]) {
        const pages = paging.some((route) => route.operationId === service)
        // The whole current secret string, resolved by CloudFormation at deploy time: nothing a
        // client could know (such as a table name) goes into it, and no cold start fetches it.
        expect(
          envOf(functionByService(template, service)[1]).CURSOR_SECRET,
          `${service}: the cursor secret reaches exactly the routes with \`cursors: true\` (infra/constructs/cursor-secret-construct.ts)`,
        ).toEqual(
          pages
            ? {
                'Fn::Join': [
                  '',
                  ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}'],
                ],
              }
            : undefined,
        )
      }
    }
  })
})
