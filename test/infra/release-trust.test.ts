import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { settingsReader } from '#infra/config/cdk-json-settings.ts'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { addReleaseStacks, RELEASE_STACK_OUTPUTS } from '#infra/stacks/petstore-release-stack.ts'
import { STAGE_NAMES, type StageName } from '#shared/config/stages-config.ts'
import { RELEASE_SETTINGS, settingsOf } from './support/stage-settings.ts'

/**
 * Who may assume a stage's release role (docs/deploying.md, "The release pipeline"): GitHub's
 * OIDC tokens for a job of the repository in the stage's environment, the subject matched exactly
 * in the form GitHub sends it; the account's one GitHub provider, made once; the outputs an
 * operator copies and checks.
 */
const STAGING_ACCOUNT = '111111111111'
const PRODUCTION_ACCOUNT = '222222222222'
const OWNER_ID = 1234567
const REPOSITORY_ID = 987654321
const HOST = 'token.actions.githubusercontent.com'

/** Two accounts and a repository made today (GitHub's ids): the checklist's first setup. */
const TWO_ACCOUNTS = {
  ...RELEASE_SETTINGS,
  'staging.account': STAGING_ACCOUNT,
  'production.account': PRODUCTION_ACCOUNT,
  'release.oneAccountForBothStages': undefined,
}

interface TrustStatement {
  Effect: string
  Action: string
  Principal: { Federated: unknown }
  Condition: Record<string, Record<string, unknown>>
}

/** Both stages' release stacks from these settings, as app.ts makes them (once per settings). */
const made = new Map<string, ReturnType<typeof makeReleaseStacks>>()
const releaseStacks = (values: Record<string, unknown>) => {
  const key = JSON.stringify(values)
  const stacks = made.get(key) ?? makeReleaseStacks(values)
  made.set(key, stacks)
  return stacks
}

const makeReleaseStacks = (values: Record<string, unknown>) => {
  const settings = settingsOf(values)
  // Templates read here; CDK's WASM rule check runs on the app.ts synthesis.
  const app = new App({ builtinCloudFormationValidation: false })
  const configs = STAGE_NAMES.map((stage) => readStageConfig(settingsReader(settings), stage))
  const stacks = addReleaseStacks(app, configs, settings)
  const byStage = (stage: StageName) => {
    const stack = stacks.find((candidate) => candidate.stackName === `petstore-release-${stage}`)
    if (!stack) throw new Error(`no release stack for ${stage}`)
    return stack
  }
  const templates = new Map<StageName, Template>()
  const template = (stage: StageName): Template => {
    const found = templates.get(stage) ?? Template.fromStack(byStage(stage))
    templates.set(stage, found)
    return found
  }
  return { byStage, template }
}

const trustOf = (template: Template): TrustStatement => {
  // The deploy role (production's plan role: release-plan-role.test.ts).
  const roles = Object.entries(template.findResources('AWS::IAM::Role'))
    .filter(([id]) => /^GitHubDeployRole(?!PlanRole)/.test(id))
    .map(([, role]) => role) as {
    Properties: { AssumeRolePolicyDocument: { Statement: TrustStatement[] } }
  }[]
  expect(roles).toHaveLength(1)
  const statements = roles[0]?.Properties.AssumeRolePolicyDocument.Statement ?? []
  expect(statements).toHaveLength(1)
  return statements[0] as TrustStatement
}

/** The exact-match condition of a trust: nothing but StringEquals on the audience and subject. */
const expectExactTrust = (trust: TrustStatement, subject: string | string[]) => {
  expect(trust).toMatchObject({ Effect: 'Allow', Action: 'sts:AssumeRoleWithWebIdentity' })
  expect(trust.Condition).toEqual({
    StringEquals: { [`${HOST}:aud`]: 'sts.amazonaws.com', [`${HOST}:sub`]: subject },
  })
  for (const value of [subject].flat()) expect(value).not.toMatch(/[*?]/)
}

describe.each(STAGE_NAMES)("the %s release role's OIDC trust", (stage) => {
  it('trusts the immutable subject alone once the ids are set (a repository made today)', () => {
    const template = releaseStacks(TWO_ACCOUNTS).template(stage)
    // Credentials for one job: a session of an hour at most.
    template.hasResourceProperties('AWS::IAM::Role', { MaxSessionDuration: 3600 })
    const trust = trustOf(template)
    expectExactTrust(trust, `repo:acme@${OWNER_ID}/petstore@${REPOSITORY_ID}:environment:${stage}`)
  })

  it('trusts both forms, each exactly, only under the migration setting', () => {
    const trust = trustOf(
      releaseStacks({ ...TWO_ACCOUNTS, 'release.immutableSubjectMigration': true }).template(stage),
    )
    expectExactTrust(trust, [
      `repo:acme/petstore:environment:${stage}`,
      `repo:acme@${OWNER_ID}/petstore@${REPOSITORY_ID}:environment:${stage}`,
    ])
  })

  it('trusts the name form alone for an older repository that said so', () => {
    const trust = trustOf(
      releaseStacks({
        ...TWO_ACCOUNTS,
        'release.githubOwnerId': undefined,
        'release.githubRepositoryId': undefined,
        'release.nameSubject': true,
      }).template(stage),
    )
    expectExactTrust(trust, `repo:acme/petstore:environment:${stage}`)
  })
})

describe('release settings that would trust the wrong subject', () => {
  const refused = (values: Record<string, unknown>) => () => releaseStacks(values)

  it('refuses a repository with neither ids nor the name form, saying how to read the ids', () => {
    expect(
      refused({
        ...TWO_ACCOUNTS,
        'release.githubOwnerId': undefined,
        'release.githubRepositoryId': undefined,
      }),
    ).toThrow(
      /petstore\.release\.githubOwnerId=null: expected GitHub's owner and repository ids \(gh api repos\/acme\/petstore --jq '\.full_name, \.owner\.id, \.id'\).*15 July 2026.*release\.nameSubject/,
    )
  })

  it('refuses one id without the other, the name form beside the ids, migration without ids', () => {
    expect(refused({ ...TWO_ACCOUNTS, 'release.githubRepositoryId': undefined })).toThrow(
      /githubRepositoryId=null: expected githubOwnerId and githubRepositoryId together/,
    )
    expect(refused({ ...TWO_ACCOUNTS, 'release.nameSubject': true })).toThrow(
      /release\.nameSubject=true: expected nothing with the ids set.*immutableSubjectMigration/,
    )
    expect(
      refused({
        ...TWO_ACCOUNTS,
        'release.githubOwnerId': undefined,
        'release.githubRepositoryId': undefined,
        'release.immutableSubjectMigration': true,
      }),
    ).toThrow(/immutableSubjectMigration=true: expected the ids too/)
    expect(refused({ ...TWO_ACCOUNTS, 'release.githubOwnerId': 'acme' })).toThrow(
      /githubOwnerId="acme": expected GitHub's numeric id/,
    )
  })

  it("refuses an organisation's custom subject template, saying what to set instead", () => {
    expect(
      refused({
        ...TWO_ACCOUNTS,
        'release.oidcSubjectClaimKeys': ['repo', 'context', 'job_workflow_ref'],
      }),
    ).toThrow(
      /oidcSubjectClaimKeys=\["repo","context","job_workflow_ref"\]: expected no custom OIDC subject template.*gh api --method PUT repos\/acme\/petstore\/actions\/oidc\/customization\/sub -F use_default=true/,
    )
  })
})

describe("the accounts' GitHub OIDC providers", () => {
  const providers = (template: Template) => template.findResources('AWS::IAM::OIDCProvider')
  const providerArn = (account: string) =>
    `arn:aws:iam::${account}:oidc-provider/token.actions.githubusercontent.com`
  /** A Federated principal as text: the provider made in the stack, or an ARN written out. */
  const federated = (template: Template): string => {
    const value = trustOf(template).Principal.Federated as
      | { 'Fn::GetAtt': [string, string] }
      | { 'Fn::Join': [string, unknown[]] }
    if ('Fn::GetAtt' in value) return `made here: ${value['Fn::GetAtt'][0]}`
    return value['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : 'aws'))
      .join(value['Fn::Join'][0])
  }

  it('are made once per account, kept once made, and trusted by that account role', () => {
    const { template, byStage } = releaseStacks(TWO_ACCOUNTS)
    for (const stage of STAGE_NAMES) {
      const [[id, provider]] = Object.entries(providers(template(stage))) as [
        [string, { Properties: unknown; DeletionPolicy: string }],
      ]
      expect(provider).toMatchObject({
        Properties: { Url: `https://${HOST}`, ClientIdList: ['sts.amazonaws.com'] },
        DeletionPolicy: 'RetainExceptOnCreate',
      })
      expect(federated(template(stage))).toBe(`made here: ${id}`)
      expect(byStage(stage).account).toBe(
        stage === 'staging' ? STAGING_ACCOUNT : PRODUCTION_ACCOUNT,
      )
    }
  })

  it('are used, not made, in an account listed as having one', () => {
    const { template } = releaseStacks({
      ...TWO_ACCOUNTS,
      'release.accountsWithGitHubOidcProvider': [PRODUCTION_ACCOUNT],
    })
    expect(Object.keys(providers(template('staging')))).toHaveLength(1)
    expect(providers(template('production'))).toEqual({})
    expect(federated(template('production'))).toBe(providerArn(PRODUCTION_ACCOUNT))
  })

  it("in one account for both stages: staging's stack makes it, production's uses it after", () => {
    const { template, byStage } = releaseStacks(RELEASE_SETTINGS)
    expect(Object.keys(providers(template('staging')))).toHaveLength(1)
    expect(providers(template('production'))).toEqual({})
    expect(federated(template('production'))).toBe(providerArn(STAGING_ACCOUNT))
    expect(byStage('production').dependencies.map((stack) => stack.stackName)).toEqual([
      'petstore-release-staging',
    ])
    const existing = releaseStacks({
      ...RELEASE_SETTINGS,
      'release.accountsWithGitHubOidcProvider': [STAGING_ACCOUNT],
    })
    expect(providers(existing.template('staging'))).toEqual({})
    expect(existing.byStage('production').dependencies).toEqual([])
  })

  it('refuses the old single provider ARN, and an account that is not a stage', () => {
    expect(() =>
      releaseStacks({ ...TWO_ACCOUNTS, 'release.oidcProviderArn': providerArn(STAGING_ACCOUNT) }),
    ).toThrow(/oidcProviderArn=.*expected nothing: an account has one provider for GitHub/)
    expect(() =>
      releaseStacks({
        ...TWO_ACCOUNTS,
        'release.accountsWithGitHubOidcProvider': ['333333333333'],
      }),
    ).toThrow(
      /accountsWithGitHubOidcProvider=\["333333333333"\]: expected a list of the stages' accounts \(111111111111, 222222222222\)/,
    )
  })
})

describe("a release configuration's accounts", () => {
  it('names both stages, or synthesis stops', () => {
    for (const stage of STAGE_NAMES) {
      expect(() => releaseStacks({ ...TWO_ACCOUNTS, [`${stage}.account`]: undefined })).toThrow(
        `Invalid cdk.json setting petstore.${stage}.account=null: expected the stage's 12-digit AWS account, in quotes: a release configuration names both stages' accounts`,
      )
    }
    expect(() => releaseStacks({ ...TWO_ACCOUNTS, 'production.account': '2222' })).toThrow(
      /petstore\.production\.account="2222": expected a 12-digit AWS account id/,
    )
  })

  it('puts both stages in one account only when a setting says what that gives up', () => {
    expect(() =>
      releaseStacks({ ...RELEASE_SETTINGS, 'release.oneAccountForBothStages': undefined }),
    ).toThrow(
      /oneAccountForBothStages=null: expected true to put both stages in account 111111111111, acknowledging what that gives up: the staging job, which no one approves, assumes the same bootstrap roles as production's job, and those can change production's stacks/,
    )
    expect(() =>
      releaseStacks({ ...TWO_ACCOUNTS, 'release.oneAccountForBothStages': true }),
    ).toThrow(
      /oneAccountForBothStages=true: expected nothing: the stages have accounts of their own/,
    )
  })
})

describe("a release stack's outputs", () => {
  it('are RoleArn, PlanRoleArn (production), OidcProviderArn, TrustedSubjects and BootstrapCommand, by those very names', () => {
    const template = releaseStacks(TWO_ACCOUNTS).template('production')
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>
    expect(Object.keys(outputs).sort()).toEqual([
      'BootstrapCommand',
      'OidcProviderArn',
      'PlanRoleArn',
      'RoleArn',
      'TrustedSubjects',
    ])
    expect([...RELEASE_STACK_OUTPUTS].sort()).toEqual(Object.keys(outputs).sort())
    expect(outputs.TrustedSubjects?.Value).toBe(
      `repo:acme@${OWNER_ID}/petstore@${REPOSITORY_ID}:environment:production repo:acme@${OWNER_ID}/petstore@${REPOSITORY_ID}:environment:production-plan`,
    )
    expect(
      Object.keys(releaseStacks(TWO_ACCOUNTS).template('staging').toJSON().Outputs).sort(),
    ).toEqual(['BootstrapCommand', 'OidcProviderArn', 'RoleArn', 'TrustedSubjects'])
    expect(outputs.RoleArn?.Value).toMatchObject({ 'Fn::GetAtt': [expect.any(String), 'Arn'] })
  })
})
