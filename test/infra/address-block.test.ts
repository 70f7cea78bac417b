import { describe, expect, it } from 'vitest'
import {
  countUnauthorized,
  type LogEvent,
  UNAUTHORIZED_FILTER_PATTERN,
} from '#functions/address-block/access-log-events.ts'
import {
  ADDRESS_BLOCK_ENV,
  ADDRESS_BLOCK_OPERATION,
} from '#functions/address-block/address-block-dependencies.ts'
import { STAGES } from '#shared/config/stages-config.ts'
import {
  appStage,
  type CfnResource,
  envOf,
  functionByService,
  propsOf,
  resourcesOf,
} from './support/synth-app.ts'
import { type WafRequest, webAclEvaluator } from './support/web-acl-evaluator.ts'

/**
 * The automatic block as synthesized: the access log's unauthorized answers go to the
 * address-block function, which alone writes the web ACL's two automatic block lists; and, on the
 * staging web ACL, what it does to a flood: the evaluator (support/web-acl-evaluator.ts) decides
 * each request, the requests that pass become the access log's 401 lines, delivered late as
 * CloudWatch Logs delivers them and counted with the function's own counting.
 */
const staging = appStage('staging').api
const production = appStage('production').api

type Resources = Record<string, CfnResource>
const ipSetOf = (template: typeof staging, suffix: string): [string, CfnResource] =>
  resourcesOf(template, 'AWS::WAFv2::IPSet').find(([, set]) =>
    String(propsOf(set).Name).endsWith(suffix),
  ) as [string, CfnResource]

describe('the address-block function', () => {
  it('gets the access log’s unauthorized lines, a minute’s schedule and the stage’s numbers', () => {
    for (const template of [staging, production]) {
      const [fnId, fn] = functionByService(template, ADDRESS_BLOCK_OPERATION)
      const [v4Id] = ipSetOf(template, '-auto-blocked-ipv4')
      const [v6Id] = ipSetOf(template, '-auto-blocked-ipv6')
      expect(envOf(fn)).toMatchObject({
        [ADDRESS_BLOCK_ENV.ipSetV4]: { Ref: v4Id },
        [ADDRESS_BLOCK_ENV.ipSetV6]: { Ref: v6Id },
        [ADDRESS_BLOCK_ENV.unauthorizedPerMinute]: template === staging ? '10000' : '50000',
        [ADDRESS_BLOCK_ENV.blockMinutes]: '60',
        [ADDRESS_BLOCK_ENV.exempt]: '',
      })
      const [[, filter]] = resourcesOf(template, 'AWS::Logs::SubscriptionFilter') as [
        [string, CfnResource],
      ]
      const [[accessLogId]] = resourcesOf(template, 'AWS::Logs::LogGroup').filter(([, group]) =>
        String(propsOf(group).LogGroupName).endsWith('/api-access'),
      ) as [[string, CfnResource]]
      expect(propsOf(filter)).toMatchObject({
        LogGroupName: { Ref: accessLogId },
        FilterPattern: UNAUTHORIZED_FILTER_PATTERN,
        DestinationArn: { 'Fn::GetAtt': [fnId, 'Arn'] },
      })
      // CloudWatch Logs may invoke it, for this log group alone.
      const permissions = resourcesOf(template, 'AWS::Lambda::Permission')
        .map(([, permission]) => propsOf(permission))
        .filter((permission) => permission.Principal === 'logs.amazonaws.com')
      expect(permissions).toEqual([
        expect.objectContaining({
          FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
          SourceArn: { 'Fn::GetAtt': [accessLogId, 'Arn'] },
        }),
      ])
      const schedules = resourcesOf(template, 'AWS::Events::Rule').filter(([, rule]) =>
        JSON.stringify(propsOf(rule).Targets).includes(fnId),
      )
      expect(schedules.map(([, rule]) => propsOf(rule).ScheduleExpression)).toEqual([
        'rate(1 minute)',
      ])
      // A delivery that failed halfway is never run again (it would count its answers twice).
      const [[, invokeConfig]] = resourcesOf(template, 'AWS::Lambda::EventInvokeConfig').filter(
        ([, config]) => JSON.stringify(propsOf(config).FunctionName).includes(fnId),
      ) as [[string, CfnResource]]
      expect(propsOf(invokeConfig).MaximumRetryAttempts).toBe(0)
    }
  })

  it('may write the two automatic block lists and its own table, and nothing else', () => {
    const [, fn] = functionByService(staging, ADDRESS_BLOCK_OPERATION)
    const roleId = (propsOf(fn).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]
    const statements = resourcesOf(staging, 'AWS::IAM::Policy')
      .filter(([, policy]) => JSON.stringify(propsOf(policy).Roles).includes(roleId))
      .flatMap(
        ([, policy]) =>
          (propsOf(policy).PolicyDocument as { Statement: Record<string, unknown>[] }).Statement,
      )
    const [v4Id] = ipSetOf(staging, '-auto-blocked-ipv4')
    const [v6Id] = ipSetOf(staging, '-auto-blocked-ipv6')
    const [[tableId]] = resourcesOf(staging, 'AWS::DynamoDB::Table') as [[string, CfnResource]]
    /** The resources each action is allowed on, however the statements are grouped. */
    const allowed = new Map<string, unknown[]>()
    for (const statement of statements) {
      for (const action of [statement.Action].flat() as string[]) {
        allowed.set(action, [...(allowed.get(action) ?? []), ...[statement.Resource].flat()])
      }
    }
    const ipSets = [{ 'Fn::GetAtt': [v4Id, 'Arn'] }, { 'Fn::GetAtt': [v6Id, 'Arn'] }]
    expect(allowed.get('wafv2:GetIPSet')).toEqual(expect.arrayContaining(ipSets))
    expect(allowed.get('wafv2:UpdateIPSet')).toEqual(expect.arrayContaining(ipSets))
    const wafActions = [...allowed.keys()].filter((action) => action.startsWith('wafv2:'))
    expect(wafActions.sort()).toEqual(['wafv2:GetIPSet', 'wafv2:UpdateIPSet'])
    for (const action of wafActions) expect(allowed.get(action)).toHaveLength(2)
    const dynamoActions = [...allowed.keys()].filter((action) => action.startsWith('dynamodb:'))
    expect(dynamoActions.sort()).toEqual([
      'dynamodb:DeleteItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ])
    for (const action of dynamoActions) {
      expect(allowed.get(action)).toEqual([{ 'Fn::GetAtt': [tableId, 'Arn'] }])
    }
  })
})

describe('the automatic block on the staging web ACL', () => {
  const [, acl] = resourcesOf(staging, 'AWS::WAFv2::WebACL')[0] as [string, CfnResource]
  const [, fn] = functionByService(staging, ADDRESS_BLOCK_OPERATION)
  const threshold = Number(envOf(fn)[ADDRESS_BLOCK_ENV.unauthorizedPerMinute])
  const throttle = STAGES.staging.throttleRateLimit
  const forged = (n: number) => `Bearer forged${n.toString(36).padStart(34, '0')}`
  const VALID = `Bearer ${'k'.repeat(40)}`

  /**
   * Two hosts each sending forged keys just under their per-address ceiling (499 a second) for
   * `seconds`: the requests that pass, per second. Each passing request is a 401 line of the
   * access log, delivered `deliverySeconds` later (CloudWatch Logs: "usually less than three
   * minutes") and counted per address and minute as the function counts them; an address over
   * the template's rate goes into the automatic block list (the IP set the web ACL reads).
   */
  const twoHosts = ({ seconds, deliverySeconds }: { seconds: number; deliverySeconds: number }) => {
    const resources = structuredClone(staging.toJSON().Resources) as Resources
    const [v4Id] = ipSetOf(staging, '-auto-blocked-ipv4')
    const blockList = (resources[v4Id] as CfnResource).Properties as { Addresses: string[] }
    const waf = webAclEvaluator(acl, resources)
    const hosts = ['198.51.100.21', '198.51.100.22']
    const rate = throttle / 2 - 1
    const passedPerSecond: number[] = Array(seconds).fill(0)
    const log: LogEvent[] = []
    const counts = new Map<string, number>()
    const blockedAt = new Map<string, number>()
    let delivered = 0
    let n = 0
    for (let second = 0; second < seconds; second += 1) {
      // The deliveries due by now, then a second of both floods.
      const start = delivered
      while (
        delivered < log.length &&
        (log[delivered] as LogEvent).timestamp <= (second - deliverySeconds) * 1_000
      )
        delivered += 1
      const due = log.slice(start, delivered)
      for (const { address, minute, count } of countUnauthorized(due).counts) {
        const key = `${address} ${minute}`
        counts.set(key, (counts.get(key) ?? 0) + count)
        if ((counts.get(key) as number) > threshold && !blockedAt.has(address)) {
          blockedAt.set(address, second)
          blockList.Addresses.push(`${address}/32`)
        }
      }
      for (let i = 0; i < rate; i += 1) {
        for (const ip of hosts) {
          const at = second + i / rate
          n += 1
          const request: WafRequest = { at, ip, method: 'GET', authorization: forged(n) }
          if (waf(request).blockedBy !== undefined) continue
          passedPerSecond[second] = (passedPerSecond[second] ?? 0) + 1
          log.push({
            id: String(n),
            timestamp: Math.floor(at * 1_000),
            message: JSON.stringify({ ip, status: '401' }),
          })
        }
      }
    }
    return { passedPerSecond, blockedAt, waf }
  }

  it('two hosts flooding forged keys hold a whole method through the per-address ceilings until blocked automatically; then neither gets a request through, valid keys included', () => {
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0)
    const { passedPerSecond, blockedAt, waf } = twoHosts({ seconds: 60, deliverySeconds: 30 })
    // Until the block, each host stays just under its ceiling (30,000 a minute) and the two of
    // them take 998 of the 1,000 requests a second the method serves (the stage throttle).
    expect(passedPerSecond.slice(0, 51)).toEqual(Array(51).fill(2 * 499))
    // Each crosses the rate 20 s into its first minute (10,001 unauthorized answers at 499 a
    // second) and is blocked once those lines are delivered (30 s later here; AWS: usually under
    // three minutes), and from then on nothing of it passes.
    expect([...blockedAt.values()]).toEqual([51, 51])
    expect(sum(passedPerSecond.slice(51))).toBe(0)
    expect(waf({ at: 60, ip: '198.51.100.21', method: 'GET', authorization: VALID })).toEqual({
      blockedBy: 'AutoBlockedAddresses',
      status: 429,
    })
    // Another address, and the same key from it, are not affected.
    expect(
      waf({ at: 60, ip: '198.51.100.99', method: 'GET', authorization: VALID }).blockedBy,
    ).toBeUndefined()
  })
})
