import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import { readReleaseConfig } from '#infra/config/release-config.ts'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { addReleaseStacks } from '#infra/stacks/petstore-release-stack.ts'
import { STAGE_NAMES, type StageName } from '#shared/config/stages-config.ts'
import { RELEASE_SETTINGS, settingsOf } from './support/stage-settings.ts'

/**
 * Production's plan role, statement by statement (docs/release-permissions.md, "The production
 * plan role"): it trusts the `production-plan` environment's subject alone and may prepare change
 * sets, never execute one. Where a person applies production's plans (`productionApproval:
 * operator`), production's release stack makes no role a workflow could execute with. The same
 * policies evaluated as IAM would: test/infra/escalation-table.test.ts.
 */
const ACCOUNT = '111111111111'
const REGION = 'eu-west-1'
const SUBJECT = 'repo:acme@1234567/petstore@987654321:environment:production-plan'

interface Statement {
  Sid?: string
  Effect: string
  Action: string | string[]
  Resource: unknown
  Condition?: Record<string, Record<string, unknown>>
}

const made = new Map<string, (stage: StageName) => Template>()
const releaseTemplates = (values: Record<string, unknown>) => {
  const key = JSON.stringify(values)
  const known = made.get(key)
  if (known) return known
  const settings = settingsOf({ ...values, 'staging.region': REGION, 'production.region': REGION })
  const app = new App({ builtinCloudFormationValidation: false })
  const configs = STAGE_NAMES.map((stage) => readStageConfig(settingsReader(settings), stage))
  const stacks = addReleaseStacks(app, configs, settings)
  const templates = new Map<StageName, Template>()
  const template = (stage: StageName) => {
    const found =
      templates.get(stage) ??
      Template.fromStack(
        stacks.find((s) => s.stackName === `petstore-release-${stage}`) as (typeof stacks)[number],
      )
    templates.set(stage, found)
    return found
  }
  made.set(key, template)
  return template
}

/** A template value as text: joins of strings and pseudo parameters, resolved for the test account. */
const text = (value: unknown): string => {
  if (typeof value === 'string') return value
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
  if (join) return join[1].map(text).join(join[0])
  const ref = (value as { Ref?: string }).Ref
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::AccountId': ACCOUNT,
    'AWS::Region': REGION,
  }
  if (ref && pseudo[ref]) return pseudo[ref]
  throw new Error(`unexpected template value ${JSON.stringify(value)}`)
}
const list = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(text)

const rolesOf = (template: Template) =>
  template.findResources('AWS::IAM::Role') as Record<
    string,
    { Properties: { RoleName: unknown; AssumeRolePolicyDocument: { Statement: Statement[] } } }
  >
const planRoleId = (template: Template) =>
  Object.keys(rolesOf(template)).find((id) => id.startsWith('GitHubDeployRolePlanRole'))

const planStatements = (template: Template): Statement[] => {
  const id = planRoleId(template)
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as {
    Properties: { Roles: { Ref: string }[]; PolicyDocument: { Statement: Statement[] } }
  }[]
  return policies
    .filter((policy) => policy.Properties.Roles.some((role) => role.Ref === id))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement)
}

const role = (name: string) =>
  `arn:aws:iam::${ACCOUNT}:role/cdk-hnb659fds-${name}-${ACCOUNT}-${REGION}`
const stackArns = ['data', 'api'].map(
  (part) => `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/petstore-production-${part}/*`,
)

describe("production's plan role", () => {
  const template = releaseTemplates(RELEASE_SETTINGS)('production')

  it('is trusted by a job in the production-plan environment alone, exactly', () => {
    const planRole = rolesOf(template)[planRoleId(template) as string]
    expect(text(planRole?.Properties.RoleName)).toBe(`petstore-production-plan-${REGION}`)
    const [trust, ...more] = planRole?.Properties.AssumeRolePolicyDocument.Statement ?? []
    expect(more).toEqual([])
    expect(trust?.Condition).toEqual({
      StringEquals: {
        'token.actions.githubusercontent.com:aud': 'sts.amazonaws.com',
        'token.actions.githubusercontent.com:sub': SUBJECT,
      },
    })
  })

  it('may prepare change sets of the two production stacks, run by the execution role, and read them', () => {
    const bySid = Object.fromEntries(planStatements(template).map((s) => [s.Sid, s]))
    expect(Object.keys(bySid).sort()).toEqual([
      'PassExecutionRoleToCloudFormation',
      'PrepareChangeSets',
      'PublishAssets',
      'ReadAndCleanUpChangeSets',
      'ReadBootstrapVersion',
      'ReadTemplates',
    ])
    expect(list(bySid.PrepareChangeSets?.Action)).toEqual(['cloudformation:CreateChangeSet'])
    expect(list(bySid.PrepareChangeSets?.Resource)).toEqual(stackArns)
    expect(bySid.PrepareChangeSets?.Condition?.ArnEquals?.['cloudformation:RoleArn']).toBeDefined()
    expect(text(bySid.PrepareChangeSets?.Condition?.ArnEquals?.['cloudformation:RoleArn'])).toBe(
      role('cfn-exec-role'),
    )
    expect(list(bySid.ReadAndCleanUpChangeSets?.Resource)).toEqual(stackArns)
    expect(list(bySid.PassExecutionRoleToCloudFormation?.Resource)).toEqual([role('cfn-exec-role')])
    expect(bySid.PassExecutionRoleToCloudFormation?.Condition).toEqual({
      StringEquals: { 'iam:PassedToService': 'cloudformation.amazonaws.com' },
    })
    expect(list(bySid.PublishAssets?.Resource)).toEqual([role('file-publishing-role')])
  })

  it('holds nothing that executes: no ExecuteChangeSet, no stack write, no deploy role', () => {
    const actions = planStatements(template).flatMap((s) => list(s.Action))
    expect(
      actions.filter((a) =>
        /^cloudformation:(Execute|Update|Delete(?!ChangeSet)|CreateStack|Rollback|Continue|\*)/.test(
          a,
        ),
      ),
    ).toEqual([])
    const assumable = planStatements(template)
      .filter((s) => list(s.Action).includes('sts:AssumeRole'))
      .flatMap((s) => list(s.Resource))
    expect(assumable).toEqual([role('file-publishing-role')])
    for (const statement of planStatements(template)) {
      expect(statement.Effect).toBe('Allow')
      for (const resource of list(statement.Resource)) expect(resource).not.toBe('*')
    }
  })

  it("is production's alone: staging's release stack makes none", () => {
    expect(planRoleId(releaseTemplates(RELEASE_SETTINGS)('staging'))).toBeUndefined()
  })
})

describe('production applied by a person (productionApproval: operator)', () => {
  const templates = releaseTemplates({
    ...RELEASE_SETTINGS,
    'release.productionApproval': 'operator',
  })

  it('makes no role a workflow job could execute production with: the plan role alone', () => {
    const production = templates('production')
    expect(Object.keys(rolesOf(production))).toEqual([planRoleId(production)])
    const outputs = production.toJSON().Outputs as Record<string, { Value: unknown }>
    expect(Object.keys(outputs).sort()).toEqual([
      'BootstrapCommand',
      'OidcProviderArn',
      'PlanRoleArn',
      'TrustedSubjects',
    ])
    expect(outputs.TrustedSubjects?.Value).toBe(SUBJECT)
  })

  it("leaves staging's deploy role as it is", () => {
    expect(Object.keys(rolesOf(templates('staging')))).toHaveLength(1)
    expect(planRoleId(templates('staging'))).toBeUndefined()
  })
})

describe('the setting', () => {
  const read = (value: unknown) => () =>
    readReleaseConfig(
      settingsReader(settingsOf({ ...RELEASE_SETTINGS, 'release.productionApproval': value })),
    )

  it('is required with a release configuration, never defaulted, and refuses another value', () => {
    expect(read(undefined)).toThrow(
      /petstore\.release\.productionApproval=null: expected "reviewers" where GitHub enforces required reviewers .* or "operator"/,
    )
    expect(read('both')).toThrow(/productionApproval="both"/)
    expect(read('operator')()?.productionApproval).toBe('operator')
  })
})
