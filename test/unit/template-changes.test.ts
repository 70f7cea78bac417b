import { describe, expect, it } from 'vitest'
import { classify, hasNoChanges } from '#ops/release/change-set-summary.ts'
import { cdkReplacementRule } from '#ops/release/replacement-rules.ts'
import { type ReplacementRule, templateChanges } from '#ops/release/template-changes.ts'

/**
 * The offline change set of the release dry run: two templates into DescribeChangeSet's model,
 * replacement decided by the CDK CLI's resource specification.
 */
const rule: ReplacementRule = (type, property) =>
  type === 'AWS::DynamoDB::Table' && property === 'TableName' ? 'yes' : 'no'

const deployed = {
  Resources: {
    Table: {
      Type: 'AWS::DynamoDB::Table',
      Properties: { TableName: 'pets', BillingMode: 'PAY_PER_REQUEST' },
      DeletionPolicy: 'Retain',
    },
    Topic: { Type: 'AWS::SNS::Topic', Properties: {} },
    TopicEmail: {
      Type: 'AWS::SNS::Subscription',
      Properties: { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: 'Topic' } },
    },
    Fn: { Type: 'AWS::Lambda::Function', Properties: { Code: { S3Key: 'a.zip' } } },
  },
}

describe('a change set made from two templates', () => {
  it('adds, removes and modifies as CloudFormation would, with each removal’s policy', () => {
    const planned = {
      Resources: {
        Table: {
          Type: 'AWS::DynamoDB::Table',
          Properties: { TableName: 'pets-v2', BillingMode: 'PAY_PER_REQUEST' },
          DeletionPolicy: 'Retain',
        },
        Topic: { Type: 'AWS::SNS::Topic', Properties: { Tags: [{ Key: 'a', Value: 'b' }] } },
        Fn: { Type: 'AWS::Lambda::Function', Properties: { Code: { S3Key: 'b.zip' } } },
        Alarm: { Type: 'AWS::CloudWatch::Alarm', Properties: {} },
      },
    }
    const set = templateChanges('petstore-production-api', deployed, planned, rule)
    const changes = (set.Changes ?? []).map((c) => c.ResourceChange)
    expect(changes.map((c) => `${c?.Action} ${c?.LogicalResourceId}`)).toEqual([
      'Modify Table',
      'Modify Topic',
      'Modify Fn',
      'Add Alarm',
      'Remove TopicEmail',
    ])
    expect(changes[0]).toMatchObject({ Replacement: 'True', Scope: ['Properties'] })
    expect(changes[1]).toMatchObject({ Replacement: 'False', Scope: ['Tags'] })
    expect(changes[4]).toMatchObject({ PolicyAction: 'Delete' })
    expect(classify(set).map((c) => `${c.kind}:${c.logicalId}`)).toEqual([
      'replacement:Table',
      'change:Topic',
      'routine:Fn',
      'change:Alarm',
      'removal:TopicEmail',
    ])
  })

  it('keeps a retained resource in the account and makes a new one of a changed type', () => {
    const planned = {
      Resources: { Table: { Type: 'AWS::DynamoDB::GlobalTable', Properties: {} } },
    }
    const changes = (templateChanges('s', deployed, planned, rule).Changes ?? []).map(
      (c) => c.ResourceChange,
    )
    expect(changes.slice(0, 2)).toEqual([
      {
        Action: 'Remove',
        LogicalResourceId: 'Table',
        ResourceType: 'AWS::DynamoDB::Table',
        PolicyAction: 'Retain',
      },
      { Action: 'Add', LogicalResourceId: 'Table', ResourceType: 'AWS::DynamoDB::GlobalTable' },
    ])
  })

  it('has nothing to do for the same template, and everything to add for a stack not there', () => {
    expect(hasNoChanges(templateChanges('s', deployed, deployed, rule))).toBe(true)
    const fresh = templateChanges('s', undefined, deployed, rule)
    expect(fresh.Changes?.map((c) => c.ResourceChange?.Action)).toEqual([
      'Add',
      'Add',
      'Add',
      'Add',
    ])
  })

  it('reports a property that only names the new Lambda version as caused by it, not as a change', () => {
    const version = (id: string) => ({ Type: 'AWS::Lambda::Version', Properties: { x: id } })
    const alarm = (versionId: string, threshold: number) => ({
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        Threshold: threshold,
        Dimensions: [{ Name: 'ExecutedVersion', Value: { 'Fn::GetAtt': [versionId, 'Version'] } }],
      },
    })
    const before = { Resources: { VersionOld: version('a'), Alarm: alarm('VersionOld', 1) } }
    const follows = templateChanges(
      's',
      before,
      { Resources: { VersionNew: version('b'), Alarm: alarm('VersionNew', 1) } },
      rule,
    )
    const modified = follows.Changes?.find((c) => c.ResourceChange?.Action === 'Modify')
    expect(modified?.ResourceChange?.Details).toEqual([
      expect.objectContaining({
        ChangeSource: 'ResourceAttribute',
        CausingEntity: 'VersionNew.Version',
      }),
    ])
    expect(classify(follows).find((c) => c.logicalId === 'Alarm')).toMatchObject({
      kind: 'routine',
      action: 'Follows',
    })
    // The same swap with the alarm's own threshold changed too: a change the approver sees.
    const changed = templateChanges(
      's',
      before,
      { Resources: { VersionNew: version('b'), Alarm: alarm('VersionNew', 5) } },
      rule,
    )
    expect(classify(changed).find((c) => c.logicalId === 'Alarm')).toMatchObject({
      kind: 'change',
      properties: ['Dimensions', 'Threshold'],
    })
    // A reference to a resource that stays (not added by this change set) is the template's own change.
    const moved = templateChanges(
      's',
      { Resources: { A: version('a'), B: version('b'), Alarm: alarm('A', 1) } },
      { Resources: { A: version('a'), B: version('b'), Alarm: alarm('B', 1) } },
      rule,
    )
    expect(classify(moved).find((c) => c.logicalId === 'Alarm')?.kind).toBe('change')
  })

  it('takes replacement from the pinned CDK CLI’s resource specification', () => {
    const cdk = cdkReplacementRule()
    expect(cdk('AWS::DynamoDB::Table', 'TableName')).toBe('yes')
    expect(cdk('AWS::DynamoDB::Table', 'BillingMode')).toBe('no')
    expect(cdk('AWS::Lambda::Function', 'Code')).toBe('no')
    expect(cdk('AWS::Lambda::Function', 'FunctionName')).toBe('yes')
    expect(cdk('Custom::KeySync', 'Anything')).toBe('no')
    expect(cdk('AWS::Nothing::Known', 'Anything')).toBe('maybe')
  })
})
