import { describe, expect, it } from 'vitest'
import { WAF_BODY_INSPECTION_BYTES } from '#infra/constructs/web-acl-construct.ts'
import { PLAN_LIMITS } from '#shared/config/plans-config.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
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

/**
 * Bad deploys and the edge, as synthesized: production rolls each function out through CodeDeploy
 * (canary, rolled back by alarms) and puts a WAF web ACL in front of the stage; staging does
 * neither. listPets alone gets the cursor key, from a secret generated at deploy time.
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
    const synthesized = synthesizeApp({ 'production.gradualDeployment': 'false' })
    expect(
      resourcesOf(synthesized.stage('production').api, 'AWS::CodeDeploy::DeploymentGroup'),
    ).toHaveLength(0)
  })
})

describe('the WAF web ACL', () => {
  const acls = resourcesOf(production, 'AWS::WAFv2::WebACL')

  it('is on in production and off in staging', () => {
    expect(acls).toHaveLength(1)
    expect(resourcesOf(staging, 'AWS::WAFv2::WebACL')).toHaveLength(0)
    const [[aclId]] = acls as [[string, CfnResource]]
    const [[, association]] = resourcesOf(production, 'AWS::WAFv2::WebACLAssociation') as [
      [string, CfnResource],
    ]
    expect(propsOf(association).WebACLArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] })
    expect(JSON.stringify(propsOf(association).ResourceArn)).toContain('/stages/')
  })

  const rules = () =>
    propsOf((acls[0] as [string, CfnResource])[1]).Rules as {
      Name: string
      Statement: Record<string, Record<string, unknown>>
      Action: { Block: { CustomResponse: Record<string, unknown> } }
    }[]
  const bodies = () =>
    propsOf((acls[0] as [string, CfnResource])[1]).CustomResponseBodies as Record<
      string,
      { Content: string }
    >

  it('answers bodies over the API limit with 413 payload_too_large before any function runs', () => {
    const rule = rules().find((candidate) => candidate.Name === 'BodyOverApiLimit')
    expect(rule?.Statement.SizeConstraintStatement).toMatchObject({
      FieldToMatch: { Body: { OversizeHandling: 'MATCH' } },
      ComparisonOperator: 'GT',
      Size: MAX_BODY_BYTES,
    })
    // A body of exactly the API's limit passes: WAF sees all of it (default inspection window).
    expect(propsOf((acls[0] as [string, CfnResource])[1]).AssociationConfig).toBeUndefined()
    expect(MAX_BODY_BYTES).toBeLessThanOrEqual(WAF_BODY_INSPECTION_BYTES)
    const response = rule?.Action.Block.CustomResponse as {
      ResponseCode: number
      CustomResponseBodyKey: string
    }
    expect(response.ResponseCode).toBe(413)
    expect(JSON.parse(bodies()[response.CustomResponseBodyKey]?.Content ?? '')).toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
  })

  /**
   * Whether a statement of the subset the web ACL uses matches a request's Authorization header
   * (absent: undefined), as WAF evaluates it: And, Not, ByteMatch STARTS_WITH and SizeConstraint
   * on the single header, after the text transformations named.
   */
  type Statement = Record<string, Record<string, unknown>>
  const matches = (statement: Statement, header: string | undefined): boolean => {
    const [[type, body]] = Object.entries(statement) as [[string, Record<string, unknown>]]
    if (type === 'AndStatement') {
      return (body.Statements as Statement[]).every((inner) => matches(inner, header))
    }
    if (type === 'NotStatement') return !matches(body.Statement as Statement, header)
    expect(body.FieldToMatch).toEqual({ SingleHeader: { Name: 'authorization' } })
    if (header === undefined) return false
    const transformations = (body.TextTransformations as { Type: string }[]).map((t) => t.Type)
    const value = transformations.includes('LOWERCASE') ? header.toLowerCase() : header
    if (type === 'ByteMatchStatement') {
      expect(body.PositionalConstraint).toBe('STARTS_WITH')
      return value.startsWith(body.SearchString as string)
    }
    if (type === 'SizeConstraintStatement') {
      const size = body.Size as number
      return body.ComparisonOperator === 'GE' ? value.length >= size : value.length <= size
    }
    throw new Error(`statement ${type} is not modelled here`)
  }
  const rateRules = () =>
    rules().filter((rule) => rule.Statement.RateBasedStatement !== undefined) as unknown as {
      Name: string
      Statement: { RateBasedStatement: Record<string, unknown> }
      Action: { Block: { CustomResponse: Record<string, unknown> } }
    }[]
  const VALID_KEY_HEADER = `Bearer ${'k'.repeat(40)}`

  // "If you define a scope-down statement for the rule, AWS WAF only aggregates, counts, and rate
  // limits requests that match the scope-down statement" (https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-request-limiting.html);
  // with a header as custom key, "each distinct value in the header contributes to the
  // aggregation instance" (https://docs.aws.amazon.com/waf/latest/APIReference/API_RateBasedStatementCustomKey.html).
  it("cannot count a valid key's requests with anyone else's: each rate rule either leaves keyed requests out or counts them per key value", () => {
    expect(rateRules().map((rule) => rule.Name)).toEqual(['KeylessPerAddress', 'RatePerKey'])
    for (const rule of rateRules()) {
      const statement = rule.Statement.RateBasedStatement
      const scopeDown = statement.ScopeDownStatement as Statement | undefined
      const countsKeyed = scopeDown === undefined || matches(scopeDown, VALID_KEY_HEADER)
      if (!countsKeyed) continue
      // Counted: then only per key value, never per address or across keys.
      expect(statement.AggregateKeyType, rule.Name).toBe('CUSTOM_KEYS')
      expect(statement.CustomKeys, rule.Name).toEqual([
        { Header: { Name: 'authorization', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } },
      ])
    }
  })

  it('counts requests without a key per address and answers them 429 too_many_failed_auths', () => {
    const rule = rateRules().find((candidate) => candidate.Name === 'KeylessPerAddress')
    const statement = rule?.Statement.RateBasedStatement as Record<string, unknown>
    expect(statement).toMatchObject({ AggregateKeyType: 'IP', EvaluationWindowSec: 300 })
    const scopeDown = statement.ScopeDownStatement as Statement
    for (const header of [
      undefined,
      '',
      'Basic Zm9vOmJhcg==',
      'Bearer short',
      `Bearer ${'k'.repeat(200)}`,
    ]) {
      expect(matches(scopeDown, header), String(header)).toBe(true)
    }
    for (const header of [
      VALID_KEY_HEADER,
      `bearer  ${'k'.repeat(128)}`,
      `BEARER ${'k'.repeat(20)}`,
    ]) {
      expect(matches(scopeDown, header), header).toBe(false)
    }
    const response = rule?.Action.Block.CustomResponse as {
      ResponseCode: number
      CustomResponseBodyKey: string
      ResponseHeaders: { Name: string; Value: string }[]
    }
    expect(response.ResponseCode).toBe(429)
    expect(response.ResponseHeaders).toEqual([{ Name: 'Retry-After', Value: '60' }])
    expect(JSON.parse(bodies()[response.CustomResponseBodyKey]?.Content ?? '')).toMatchObject({
      code: 'too_many_failed_auths',
      status: 429,
    })
  })

  it('limits a key above twice the largest plan the keys CLI accepts on the stage (a 20,000/min customer plan included)', () => {
    const outputs = production.toJSON().Outputs as Record<string, { Value: string }>
    const largest = Number(outputs.LargestPlanPerMinute?.Value)
    expect(largest).toBeGreaterThanOrEqual(20_000)
    expect(largest).toBeGreaterThanOrEqual(PLAN_LIMITS.business.perMinute)
    const rule = rateRules().find((candidate) => candidate.Name === 'RatePerKey')
    const limit = Number(rule?.Statement.RateBasedStatement.Limit)
    // WAF's window is 5 minutes: a key of that plan sends at most 5 x largest admitted requests.
    expect(limit).toBeGreaterThanOrEqual(2 * 5 * largest)
    expect(rule?.Statement.RateBasedStatement.EvaluationWindowSec).toBe(300)
    expect(
      matches(rule?.Statement.RateBasedStatement.ScopeDownStatement as Statement, VALID_KEY_HEADER),
    ).toBe(true)
  })

  it('follows largestPlanPerMinute, and refuses the old per-address setting by name', () => {
    const raised = synthesizeApp({ 'production.largestPlanPerMinute': '100000' })
    const outputs = raised.stage('production').api.toJSON().Outputs as Record<
      string,
      { Value: string }
    >
    expect(outputs.LargestPlanPerMinute?.Value).toBe('100000')
    const [[, acl]] = resourcesOf(raised.stage('production').api, 'AWS::WAFv2::WebACL') as [
      [string, CfnResource],
    ]
    const perKey = (propsOf(acl).Rules as { Name: string; Statement: Statement }[]).find(
      (rule) => rule.Name === 'RatePerKey',
    )
    expect(perKey?.Statement.RateBasedStatement?.Limit).toBe(1_000_000)
    expect(() => synthesizeApp({ 'production.largestPlanPerMinute': '200000' })).toThrow(
      /largestPlanPerMinute.*raise throttleRateLimit/s,
    )
    expect(() => synthesizeApp({ 'production.wafRateLimitPer5Minutes': '50000' })).toThrow(
      /wafRateLimitPer5Minutes.*wafKeylessPer5Minutes/s,
    )
  })
})

describe('the cursor key', () => {
  it('reaches listPets alone, from a secret generated at deploy time per stage', () => {
    for (const template of [production, staging]) {
      const [[secretId, secret]] = resourcesOf(template, 'AWS::SecretsManager::Secret') as [
        [string, CfnResource],
      ]
      expect(propsOf(secret).GenerateSecretString).toMatchObject({ PasswordLength: 64 })
      // The whole current secret string, resolved by CloudFormation at deploy time: nothing a
      // client could know (such as a table name) goes into it, and no cold start fetches it.
      expect(envOf(functionByService(template, 'listPets')[1]).CURSOR_SECRET).toEqual({
        'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}']],
      })
      for (const service of ['getPet', 'createPet', 'authorizer', KEY_SYNC_OPERATION]) {
        expect(envOf(functionByService(template, service)[1]).CURSOR_SECRET).toBeUndefined()
      }
    }
  })
})
