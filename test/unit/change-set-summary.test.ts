import { describe, expect, it } from 'vitest'
import {
  type ChangeSetDescription,
  classify,
  hasNoChanges,
  renderPlanSummary,
} from '#ops/release/change-set-summary.ts'

/**
 * The approver's summary, fed DescribeChangeSet output as CloudFormation returns it (shapes from
 * the API Reference: ResourceChange, ResourceChangeDetail): what an approver must see comes first,
 * and what every release changes is one line, not a list of asset hashes.
 */
const detail = (name: string, recreation = 'Never', attribute = 'Properties') => ({
  Target: { Attribute: attribute, Name: name, RequiresRecreation: recreation },
  Evaluation: 'Static',
  ChangeSource: 'DirectModification',
})

const API: ChangeSetDescription = {
  StackName: 'petstore-production-api',
  ChangeSetName: 'petstore-123-1',
  ChangeSetId: 'arn:aws:cloudformation:eu-west-1:222222222222:changeSet/petstore-123-1/abc',
  Status: 'CREATE_COMPLETE',
  ExecutionStatus: 'AVAILABLE',
  Changes: [
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'ListPetsFunction8A1B2C3D',
        ResourceType: 'AWS::Lambda::Function',
        Replacement: 'False',
        Scope: ['Properties'],
        Details: [detail('Code')],
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Add',
        LogicalResourceId: 'ListPetsFunctionCurrentVersionAAAA1111',
        ResourceType: 'AWS::Lambda::Version',
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Remove',
        LogicalResourceId: 'ListPetsFunctionCurrentVersionBBBB2222',
        ResourceType: 'AWS::Lambda::Version',
        PolicyAction: 'Retain',
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'ListPetsAliasLive',
        ResourceType: 'AWS::Lambda::Alias',
        Replacement: 'False',
        Details: [detail('FunctionVersion')],
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Remove',
        LogicalResourceId: 'MonitoringAlarmTopicopsexamplecom1A2B3C4D',
        ResourceType: 'AWS::SNS::Subscription',
        PolicyAction: 'Delete',
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'ApiDomainName0A1B2C3D',
        ResourceType: 'AWS::ApiGateway::DomainName',
        Replacement: 'True',
        Details: [detail('DomainName', 'Always'), detail('SecurityPolicy')],
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'AuthorizerServiceRoleDefaultPolicy',
        ResourceType: 'AWS::IAM::Policy',
        Replacement: 'False',
        Details: [detail('PolicyDocument')],
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'ServerErrorRateAlarm',
        ResourceType: 'AWS::CloudWatch::Alarm',
        Replacement: 'False',
        Details: [detail('Threshold')],
      },
    },
    {
      Type: 'Resource',
      ResourceChange: {
        Action: 'Modify',
        LogicalResourceId: 'GetPetMethod',
        ResourceType: 'AWS::ApiGateway::Method',
        Replacement: 'False',
        Details: [detail('AuthorizationType')],
      },
    },
  ],
}

const DATA: ChangeSetDescription = {
  StackName: 'petstore-production-data',
  ChangeSetName: 'petstore-123-1',
  Status: 'FAILED',
  StatusReason:
    "The submitted information didn't contain changes. Submit different information to create a change set.",
  ExecutionStatus: 'UNAVAILABLE',
  Changes: [],
}

describe('the approver’s summary of a plan', () => {
  const summary = renderPlanSummary({ title: 'production, run 123', changeSets: [DATA, API] })

  it('puts removals, replacements and IAM or security changes before anything else, in that order', () => {
    const at = (heading: string) => summary.indexOf(heading)
    expect(at('### Removals (1)')).toBeGreaterThan(-1)
    expect(at('### Removals')).toBeLessThan(at('### Replacements (1)'))
    expect(at('### Replacements')).toBeLessThan(at('### IAM and security changes (2)'))
    expect(at('### IAM and security changes')).toBeLessThan(at('### Other changes (1)'))
    expect(at('### Other changes')).toBeLessThan(at('### Every release'))
  })

  it('names a removed alarm subscription and says it is deleted; a replacement says what replaces it', () => {
    expect(summary).toContain(
      '| `petstore-production-api` | `MonitoringAlarmTopicopsexamplecom1A2B3C4D` | `AWS::SNS::Subscription` | deleted |',
    )
    expect(summary).toContain(
      '| `ApiDomainName0A1B2C3D` | `AWS::ApiGateway::DomainName` | DomainName |',
    )
    expect(summary).toContain(
      '`AuthorizerServiceRoleDefaultPolicy` | `AWS::IAM::Policy` | Modify | PolicyDocument |',
    )
    // A method losing its authorizer is a security change wherever it is.
    expect(summary).toContain(
      '`GetPetMethod` | `AWS::ApiGateway::Method` | Modify | AuthorizationType |',
    )
  })

  it('says in one line what every release changes, listing no bundle or version', () => {
    expect(summary).toContain(
      '1 function(s) get new code (a new bundle); 1 Lambda version(s) published; 1 older Lambda version(s) leave the stack; 1 alias(es) move to the new version.',
    )
    expect(summary).not.toContain('ListPetsFunction')
    expect(summary).not.toContain('CurrentVersion')
  })

  it('shows a stack with nothing to do as such', () => {
    expect(hasNoChanges(DATA)).toBe(true)
    expect(hasNoChanges(API)).toBe(false)
    // Outputs or stack settings only: created, so executed.
    expect(hasNoChanges({ Status: 'CREATE_COMPLETE', Changes: [] })).toBe(false)
    expect(summary).toMatch(
      /\| `petstore-production-data` \| `petstore-123-1` \| no changes \| 0 \|/,
    )
  })

  it('keeps an IAM change that follows a new version in IAM, and a metadata-only change routine', () => {
    const follows = {
      Target: { Attribute: 'Properties', Name: 'PolicyDocument', RequiresRecreation: 'Never' },
      Evaluation: 'Static',
      ChangeSource: 'ResourceAttribute',
      CausingEntity: 'FnCurrentVersionNEW.Version',
    }
    const kinds = classify({
      StackName: 's',
      Changes: [
        {
          ResourceChange: {
            Action: 'Add',
            LogicalResourceId: 'FnCurrentVersionNEW',
            ResourceType: 'AWS::Lambda::Version',
          },
        },
        {
          ResourceChange: {
            Action: 'Modify',
            LogicalResourceId: 'InvokePolicy',
            ResourceType: 'AWS::IAM::Policy',
            Details: [follows],
          },
        },
        {
          ResourceChange: {
            Action: 'Modify',
            LogicalResourceId: 'Alarm',
            ResourceType: 'AWS::CloudWatch::Alarm',
            Details: [{ ...follows, Target: { ...follows.Target, Name: 'Dimensions' } }],
          },
        },
        {
          ResourceChange: {
            Action: 'Modify',
            LogicalResourceId: 'Table',
            ResourceType: 'AWS::DynamoDB::Table',
            Details: [detail('', 'Never', 'Metadata')],
          },
        },
      ],
    }).map(({ logicalId, kind, action }) => `${kind}:${action}:${logicalId}`)
    expect(kinds).toEqual([
      'routine:Add:FnCurrentVersionNEW',
      'security:Modify:InvokePolicy',
      'routine:Follows:Alarm',
      'routine:Metadata:Table',
    ])
  })

  it('keeps a table intact whatever a name holds', () => {
    const odd = renderPlanSummary({
      title: 'a | b',
      changeSets: [
        {
          StackName: 's',
          Changes: [
            {
              ResourceChange: { Action: 'Remove', LogicalResourceId: 'x|y', ResourceType: 'T' },
            },
          ],
        },
      ],
    })
    expect(odd).toContain('`x\\|y`')
    expect(odd).toContain('## Plan: a \\| b')
  })

  it('classifies a change by its own nature, not by its place in the list', () => {
    expect(classify(API).map(({ logicalId, kind }) => `${kind}:${logicalId}`)).toEqual([
      'routine:ListPetsFunction8A1B2C3D',
      'routine:ListPetsFunctionCurrentVersionAAAA1111',
      'routine:ListPetsFunctionCurrentVersionBBBB2222',
      'routine:ListPetsAliasLive',
      'removal:MonitoringAlarmTopicopsexamplecom1A2B3C4D',
      'replacement:ApiDomainName0A1B2C3D',
      'security:AuthorizerServiceRoleDefaultPolicy',
      'change:ServerErrorRateAlarm',
      'security:GetPetMethod',
    ])
  })
})
