import { describe, expect, it } from 'vitest'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import {
  appStage,
  type CfnResource,
  propsOf,
  resourcesOf,
  synthesizeApp,
} from './support/synth-app.ts'

/**
 * What a first `cdk deploy` into a new account meets: Lambda's default concurrency quota is 10
 * in all and Lambda keeps 10 unreserved, so any reserved concurrency fails the create ("Lambda
 * quotas", AWS Lambda Developer Guide); and a failed create must leave nothing behind that makes
 * the retry fail.
 */
const templates = STAGE_NAMES.flatMap((stage) => {
  const { data, api } = appStage(stage)
  return [
    { stage, name: `${stage}-data`, template: data },
    { stage, name: `${stage}-api`, template: api },
  ]
})

/** Properties that give a resource a name CloudFormation does not choose. */
const NAME_PROPERTIES = ['LogGroupName', 'TableName', 'FunctionName', 'RoleName', 'TopicName']

const allResources = (): [string, string, CfnResource][] =>
  templates.flatMap(({ name, template }) =>
    Object.entries(template.toJSON().Resources as Record<string, CfnResource>).map(
      ([id, resource]): [string, string, CfnResource] => [name, id, resource],
    ),
  )

describe('a first deploy in a fresh account', () => {
  it('reserves no Lambda concurrency anywhere', () => {
    const functions = allResources().filter(([, , r]) => r.Type === 'AWS::Lambda::Function')
    expect(functions.length).toBeGreaterThan(0)
    for (const [stack, id, fn] of functions) {
      expect(propsOf(fn).ReservedConcurrentExecutions, `${stack} ${id}`).toBeUndefined()
    }
  })

  it('caps the authorizer alone once an account has concurrency to reserve (authorizerReservedConcurrency)', () => {
    const api = synthesizeApp({
      stage: 'production',
      'production.authorizerReservedConcurrency': '50',
    }).stage('production').api
    const reserved = resourcesOf(api, 'AWS::Lambda::Function')
      .filter(([, fn]) => propsOf(fn).ReservedConcurrentExecutions !== undefined)
      .map(([, fn]) => [
        (propsOf(fn).Environment as { Variables: Record<string, unknown> }).Variables
          .POWERTOOLS_SERVICE_NAME,
        propsOf(fn).ReservedConcurrentExecutions,
      ])
    expect(reserved).toEqual([['authorizer', 50]])
    expect(() => synthesizeApp({ 'production.authorizerReservedConcurrency': '-1' })).toThrow(
      /authorizerReservedConcurrency="-1": expected an integer of at least 0/,
    )
  })

  it('keeps a resource with a fixed name only once it was created (RetainExceptOnCreate)', () => {
    const named = allResources().filter(([, , r]) =>
      NAME_PROPERTIES.some((property) => propsOf(r)[property] !== undefined),
    )
    expect(named.length).toBeGreaterThan(0)
    for (const [stack, id, resource] of named) {
      expect(['Delete', 'RetainExceptOnCreate', undefined], `${stack} ${id}`).toContain(
        resource.DeletionPolicy,
      )
    }
    // Production keeps them after the first create; staging deletes them with the stack.
    const productionLogs = allResources().filter(
      ([stack, , r]) => stack.startsWith('production') && r.Type === 'AWS::Logs::LogGroup',
    )
    for (const [, id, group] of productionLogs) {
      expect(group.DeletionPolicy, id).toBe('RetainExceptOnCreate')
      expect(group.UpdateReplacePolicy, id).toBe('Retain')
    }
  })

  it('gives every log group a retention', () => {
    const groups = allResources().filter(([, , r]) => r.Type === 'AWS::Logs::LogGroup')
    for (const [stack, id, group] of groups) {
      expect(propsOf(group).RetentionInDays, `${stack} ${id}`).toBe(
        stack.startsWith('production') ? 90 : 14,
      )
    }
  })

  it.each(STAGE_NAMES)(
    "%s: owns API Gateway's execution log group, created before the stage",
    (stage) => {
      const { api } = appStage(stage)
      const [[restApiId]] = resourcesOf(api, 'AWS::ApiGateway::RestApi') as [[string, CfnResource]]
      const [[groupId, group]] = resourcesOf(api, 'AWS::Logs::LogGroup').filter(([, r]) =>
        JSON.stringify(propsOf(r).LogGroupName).includes('API-Gateway-Execution-Logs_'),
      ) as [[string, CfnResource]]
      expect(propsOf(group).LogGroupName).toEqual({
        'Fn::Join': ['', ['API-Gateway-Execution-Logs_', { Ref: restApiId }, `/${stage}`]],
      })
      const [[, apiStage]] = resourcesOf(api, 'AWS::ApiGateway::Stage') as [
        [string, CfnResource & { DependsOn?: string[] }],
      ]
      expect(apiStage.DependsOn).toContain(groupId)
    },
  )
})
