import type { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { KEY_CHANGE_EVENT_NAMES } from '#keys/key-change-events-config.ts'
import { MANAGEMENT_PERMISSIONS } from '#ops/keys/management-permissions-config.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'
import {
  appStage,
  type CfnResource,
  functionByService,
  propsOf,
  resourcesOf,
} from './support/synth-app.ts'

const STAGES = ['staging', 'production'] as const

/** The rules that invoke the key sync (the automatic block has a schedule of its own). */
const rulesOf = (template: Template) => {
  const [syncId] = functionByService(template, KEY_SYNC_OPERATION)
  return resourcesOf(template, 'AWS::Events::Rule')
    .map(([id, rule]) => ({ id, props: propsOf(rule) }))
    .filter(({ props }) => JSON.stringify(props.Targets).includes(`"${syncId}"`))
}

describe('the key-change events', () => {
  it('include every change the keys CLI makes, so each of its changes starts a sync', () => {
    const changes = Object.entries(MANAGEMENT_PERMISSIONS)
      .filter(([, { verb }]) => verb !== 'GET')
      .map(([command]) => command.replace(/Command$/, ''))
    expect(changes.filter((name) => !KEY_CHANGE_EVENT_NAMES.includes(name))).toEqual([])
  })
})

describe.each(STAGES)('%s key sync triggers', (stage) => {
  const template = appStage(stage).api
  const [syncId] = functionByService(template, KEY_SYNC_OPERATION)
  const syncTarget = [{ Arn: { 'Fn::GetAtt': [syncId, 'Arn'] }, Id: 'Target0' }]

  it('has exactly two rules, both invoking only the sync function', () => {
    const rules = rulesOf(template)
    expect(rules).toHaveLength(2)
    // No other rule invokes it.
    const others = resourcesOf(template, 'AWS::Events::Rule').filter(
      ([id]) => !rules.some((rule) => rule.id === id),
    )
    expect(JSON.stringify(others)).not.toContain(`"${syncId}"`)
    for (const { props } of rules) {
      expect(props.State).toBe('ENABLED')
      expect(props.Targets).toEqual(syncTarget)
    }
  })

  it('rebuilds the mirror every minute, the shortest EventBridge rate', () => {
    const schedules = rulesOf(template).filter(({ props }) => props.ScheduleExpression)
    expect(schedules.map(({ props }) => props.ScheduleExpression)).toEqual(['rate(1 minute)'])
  })

  it('rebuilds it on API Gateway key and plan changes delivered by CloudTrail', () => {
    const patterns = rulesOf(template).filter(({ props }) => props.EventPattern)
    expect(patterns.map(({ props }) => props.EventPattern)).toEqual([
      {
        source: ['aws.apigateway'],
        'detail-type': ['AWS API Call via CloudTrail'],
        detail: { eventSource: ['apigateway.amazonaws.com'], eventName: KEY_CHANGE_EVENT_NAMES },
      },
    ])
  })

  it('lets EventBridge invoke the sync function from these two rules only', () => {
    const fromEvents = resourcesOf(template, 'AWS::Lambda::Permission')
      .map(([, permission]) => propsOf(permission))
      .filter((props) => props.Principal === 'events.amazonaws.com')
      .filter((props) => JSON.stringify(props.FunctionName).includes(`"${syncId}"`))
    expect(fromEvents).toHaveLength(2)
    expect(fromEvents.map((props) => props.SourceArn)).toEqual(
      expect.arrayContaining(rulesOf(template).map(({ id }) => ({ 'Fn::GetAtt': [id, 'Arn'] }))),
    )
    for (const props of fromEvents) {
      expect(props).toMatchObject({
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [syncId, 'Arn'] },
      })
    }
  })

  it('syncs once during the deploy, after the plans and the stage exist, answering within 3 minutes', () => {
    const [[id, resource]] = resourcesOf(template, 'Custom::KeySync') as [
      [string, CfnResource & { DependsOn?: string[] }],
    ]
    const [, sync] = functionByService(template, KEY_SYNC_OPERATION)
    // The customers' plans; the pool plan of store keys is no plan the sync reads.
    const planIds = resourcesOf(template, 'AWS::ApiGateway::UsagePlan')
      .map(([planId]) => planId)
      .filter((planId) => !planId.includes('UsagePlanpool'))
    const [[stageId]] = resourcesOf(template, 'AWS::ApiGateway::Stage') as [[string, CfnResource]]
    expect(id).toMatch(/^ApiKeySyncOnDeploy/)
    expect(propsOf(resource)).toEqual({
      // CloudFormation invokes the sync function itself: no provider function to log elsewhere.
      ServiceToken: { 'Fn::GetAtt': [syncId, 'Arn'] },
      ServiceTimeout: '180',
      // A new bundle of the sync, or other plans, make the deploy sync again.
      Code: (propsOf(sync).Code as { S3Key: string }).S3Key,
      UsagePlanIds: planIds.map((planId) => ({ Ref: planId })),
    })
    // The plans come first through UsagePlanIds' Refs; the stage needs an explicit dependency.
    expect(resource.DependsOn).toContain(stageId)
    // Its grants are in place first: the run can read API Gateway and write the mirror.
    expect(resource.DependsOn).toContainEqual(expect.stringContaining('KeySyncRoleDefaultPolicy'))
  })

  it('names the sync function in an output, for confirming a held removal', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>
    expect(outputs.KeySyncFunctionName?.Value).toEqual({ Ref: syncId })
  })
})
