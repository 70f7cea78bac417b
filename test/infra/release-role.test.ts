import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import { readReleaseConfig } from '#infra/config/release-config.ts'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { addReleaseStacks, PetstoreReleaseStack } from '#infra/stacks/petstore-release-stack.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import { RELEASE_SETTINGS, settingsOf } from './support/stage-settings.ts'

/**
 * The role the release pipeline's deploy jobs assume (docs/deploying.md, "The release
 * pipeline"): everything it may do, statement by statement. Who may assume it (the OIDC trust,
 * the provider) and the stack's outputs: release-trust.test.ts.
 */
const ACCOUNT = '111111111111'
const REGION = 'eu-west-1'

interface Statement {
  Sid?: string
  Effect: string
  Action: string | string[]
  Resource?: string | string[]
  Condition?: Record<string, Record<string, string>>
  Principal?: Record<string, unknown>
}

const releaseTemplate = (stage: StageName) => {
  // The release stacks get CDK's CloudFormation rule check in the app.ts synthesis (a WASM engine:
  // 2.6 s of CPU to start); this one feeds assertions on its IAM.
  const app = new App({ builtinCloudFormationValidation: false })
  const release = readReleaseConfig(settingsReader(settingsOf(RELEASE_SETTINGS)))
  if (!release) throw new Error('no release settings')
  const stack = new PetstoreReleaseStack(app, `petstore-release-${stage}`, {
    stage,
    release,
    env: { account: ACCOUNT, region: REGION },
  })
  return Template.fromStack(stack)
}

const only = <T>(items: Record<string, T>): T => {
  const values = Object.values(items)
  expect(values).toHaveLength(1)
  return values[0] as T
}

/** The deploy role's policy (production's plan role has its own: release-plan-role.test.ts). */
const policyStatements = (template: Template): Statement[] => {
  const [roleId] = Object.keys(template.findResources('AWS::IAM::Role')).filter((id) =>
    /^GitHubDeployRole(?!PlanRole)/.test(id),
  )
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as {
    Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] }
  }[]
  const policy = only(
    Object.fromEntries(
      policies
        .filter((p) => p.Properties.Roles.some((role) => role.Ref === roleId))
        .map((p, i) => [i, p]),
    ),
  )
  return policy.Properties.PolicyDocument.Statement
}

/** A template value as a string: Fn::Join of text and the partition (aws here). */
const text = (value: unknown): string => {
  if (typeof value === 'string') return value
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
  if (join) return join[1].map(text).join(join[0])
  if ((value as { Ref?: string }).Ref === 'AWS::Partition') return 'aws'
  throw new Error(`unexpected template value ${JSON.stringify(value)}`)
}

const asList = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(text)

describe.each(['staging', 'production'] as const)('the %s release role', (stage) => {
  const template = releaseTemplate(stage)

  it('may assume the bootstrap deploy and file-publishing roles, and no other role', () => {
    const assume = policyStatements(template).filter((s) =>
      asList(s.Action).includes('sts:AssumeRole'),
    )
    expect(assume).toHaveLength(1)
    expect(asList(assume[0]?.Resource)).toEqual([
      `arn:aws:iam::${ACCOUNT}:role/cdk-hnb659fds-deploy-role-${ACCOUNT}-${REGION}`,
      `arn:aws:iam::${ACCOUNT}:role/cdk-hnb659fds-file-publishing-role-${ACCOUNT}-${REGION}`,
    ])
  })

  it("reads only the stage's stack outputs, and holds no key management, key sync or mirror read", () => {
    const bySid = Object.fromEntries(policyStatements(template).map((s) => [s.Sid, s]))
    expect({
      actions: asList(bySid.ReadStageOutputs?.Action),
      resources: asList(bySid.ReadStageOutputs?.Resource),
    }).toEqual({
      actions: ['cloudformation:DescribeStacks'],
      resources: [
        `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/petstore-${stage}-api/*`,
        `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/petstore-${stage}-data/*`,
      ],
    })
    // Nothing else: the smoke test calls with the stage's dedicated key (an environment secret).
    expect(Object.keys(bySid).sort()).toEqual(['AssumeBootstrapRoles', 'ReadStageOutputs'])
    const actions = policyStatements(template).flatMap((s) => asList(s.Action))
    expect(actions.filter((a) => /^(apigateway|lambda|dynamodb):/.test(a))).toEqual([])
  })

  it("has no action or resource wildcard beyond a named resource's suffix", () => {
    for (const statement of policyStatements(template)) {
      expect(statement.Effect).toBe('Allow')
      for (const action of asList(statement.Action)) expect(action).not.toContain('*')
      for (const resource of asList(statement.Resource)) expect(resource).not.toBe('*')
    }
  })
})

describe('the release settings', () => {
  it("put each stage's release role in that stage's own account and Region", () => {
    const settings = settingsOf({
      ...RELEASE_SETTINGS,
      'production.account': '222222222222',
      'production.region': 'eu-west-1',
      'release.oneAccountForBothStages': undefined,
    })
    const config = readStageConfig(settingsReader(settings), 'production')
    const [stack] = addReleaseStacks(new App(), [config], settings)
    expect({ account: stack?.account, region: stack?.region }).toEqual({
      account: '222222222222',
      region: 'eu-west-1',
    })
    expect(addReleaseStacks(new App(), [config], {})).toEqual([])
  })

  it('refuse a repository that is not owner/name, naming the setting', () => {
    expect(() =>
      readReleaseConfig(
        settingsReader(settingsOf({ ...RELEASE_SETTINGS, 'release.githubRepository': 'acme' })),
      ),
    ).toThrow(
      'Invalid cdk.json setting petstore.release.githubRepository="acme": expected owner/name',
    )
    expect(readReleaseConfig(() => undefined)).toBeUndefined()
  })
})
