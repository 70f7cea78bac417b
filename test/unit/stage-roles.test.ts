import { describe, expect, it } from 'vitest'
import { stageRoles } from '#local/deployed-iam/stage-roles.ts'
import type { SynthesizedStage } from '#local/deployed-iam/synthesized-stage.ts'
import { evaluate } from '#local/iam/iam-policy-evaluator.ts'
import { roleBoundaryDocument } from '#shared/config/role-boundary-config.ts'

/**
 * A function's role as its templates give it, resolved against the local stage: the tables the
 * API stack imports from the data stack become the local tables of the variables that carry
 * their names, so a policy reads as AWS would evaluate it on the deployed stage.
 */
const importOf = (name: string) => ({ 'Fn::ImportValue': `petstore-staging-data:${name}` })
const PET_ARN = importOf('ExportsOutputFnGetAttPetTableArn')

const stage: SynthesizedStage = {
  stage: 'staging',
  data: {
    Resources: { PetTable: { Type: 'AWS::DynamoDB::Table' } },
    Outputs: {
      ExportsOutputRefPetTable: {
        Value: { Ref: 'PetTable' },
        Export: { Name: 'petstore-staging-data:ExportsOutputRefPetTable' },
      },
      ExportsOutputFnGetAttPetTableArn: {
        Value: { 'Fn::GetAtt': ['PetTable', 'Arn'] },
        Export: { Name: 'petstore-staging-data:ExportsOutputFnGetAttPetTableArn' },
      },
    },
  },
  api: {
    Resources: {
      ListRole: {
        Type: 'AWS::IAM::Role',
        Properties: {
          PermissionsBoundary: { Ref: 'Boundary' },
          ManagedPolicyArns: ['arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess'],
        },
      },
      Boundary: {
        Type: 'AWS::IAM::ManagedPolicy',
        Properties: {
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [{ Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' }],
          },
        },
      },
      ListPolicy: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          Roles: [{ Ref: 'ListRole' }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              { Effect: 'Allow', Action: 'dynamodb:Scan', Resource: PET_ARN },
              {
                Effect: 'Allow',
                Action: 'dynamodb:Query',
                Resource: { 'Fn::Join': ['', [PET_ARN, '/index/status-id-index']] },
              },
            ],
          },
        },
      },
      CursorSecret: { Type: 'AWS::SecretsManager::Secret' },
      ListFunction: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Role: { 'Fn::GetAtt': ['ListRole', 'Arn'] },
          Environment: {
            Variables: {
              POWERTOOLS_SERVICE_NAME: 'listPets',
              TABLE_NAME: importOf('ExportsOutputRefPetTable'),
              CURSOR_SECRET: {
                'Fn::Join': [
                  '',
                  ['{{resolve:secretsmanager:', { Ref: 'CursorSecret' }, ':SecretString:::}}'],
                ],
              },
            },
          },
        },
      },
      // A function CDK adds itself (no service name): not one of the stage's.
      Provider: {
        Type: 'AWS::Lambda::Function',
        Properties: { Role: { 'Fn::GetAtt': ['X', 'Arn'] } },
      },
    },
  },
}

const roles = stageRoles(stage, {
  region: 'eu-west-1',
  account: '000000000000',
  variables: { TABLE_NAME: 'petstore-local-pets', CURSOR_SECRET: 'x'.repeat(64) },
})
const table = 'arn:aws:dynamodb:eu-west-1:000000000000:table/petstore-local-pets'

describe("a function's deployed role, resolved against the local stage", () => {
  it('is found for each function that names its service, and for no other', () => {
    expect([...roles.keys()]).toEqual(['listPets'])
    expect(roles.get('listPets')?.variables).toEqual([
      'POWERTOOLS_SERVICE_NAME',
      'TABLE_NAME',
      'CURSOR_SECRET',
    ])
  })

  it('allows what its policies grant on the local table and the index named, and nothing else', () => {
    const policies = roles.get('listPets')?.policies
    if (!policies) throw new Error('no role')
    const decision = (action: string, resource: string) =>
      evaluate({ action, resource }, policies).decision
    expect(decision('dynamodb:Scan', table)).toBe('allow')
    expect(decision('dynamodb:Query', `${table}/index/status-id-index`)).toBe('allow')
    expect(decision('dynamodb:Query', `${table}/index/category-id-index`)).toBe('implicit-deny')
    expect(decision('dynamodb:Query', table)).toBe('implicit-deny')
    expect(decision('dynamodb:GetItem', table)).toBe('implicit-deny')
  })

  it('holds the permissions boundary the template makes, and names the policies it cannot hold', () => {
    const role = roles.get('listPets')
    expect(role?.policies.permissionsBoundary?.Statement).toEqual([
      { Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' },
    ])
    expect(role?.unresolved).toEqual(['"arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess"'])
  })

  it("holds the stage roles' boundary, which the release stack makes and the template only names", () => {
    const named: SynthesizedStage = structuredClone(stage)
    const listRole = named.api.Resources.ListRole as { Properties: Record<string, unknown> }
    listRole.Properties.PermissionsBoundary = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':iam::',
          { Ref: 'AWS::AccountId' },
          ':policy/petstore-staging-role-boundary',
        ],
      ],
    }
    const role = stageRoles(named, {
      region: 'eu-west-1',
      account: '000000000000',
      variables: { TABLE_NAME: 'petstore-local-pets', CURSOR_SECRET: 'x'.repeat(64) },
    }).get('listPets')
    expect(role?.policies.permissionsBoundary).toEqual(roleBoundaryDocument())
    expect(role?.unresolved).toEqual(['"arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess"'])
    // The boundary holds the automatic block lists' WAF actions to those lists: a role granting
    // another IP set is refused locally, as IAM would.
    const policies = role?.policies
    if (!policies) throw new Error('no role')
    policies.identityPolicies = [
      ...policies.identityPolicies,
      {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'wafv2:UpdateIPSet', Resource: '*' }],
      },
    ]
    const ipSet = (name: string) => `arn:aws:wafv2:eu-west-1:000000000000:regional/ipset/${name}/id`
    expect(
      evaluate(
        { action: 'wafv2:UpdateIPSet', resource: ipSet('petstore-staging-auto-blocked-ipv4') },
        policies,
      ).decision,
    ).toBe('allow')
    expect(
      evaluate(
        { action: 'wafv2:UpdateIPSet', resource: ipSet('petstore-staging-blocked') },
        policies,
      ).decision,
    ).toBe('implicit-deny')
  })
})
