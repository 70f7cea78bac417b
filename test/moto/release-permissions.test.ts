import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import {
  type CloudFormationClient,
  CreateStackCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation'
import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { beforeAll, describe, expect, it } from 'vitest'
import { readReleaseConfig } from '#infra/config/release-config.ts'
import { stageRolePath } from '#infra/config/release-permissions-config.ts'
import { PetstoreReleaseStack } from '#infra/stacks/petstore-release-stack.ts'
import { roleBoundaryName } from '#shared/config/role-boundary-config.ts'
import { motoClients, motoEndpoint, readTemplate } from './support/moto-stage.ts'

/**
 * The least-privilege bootstrap in moto's CloudFormation and IAM (an emulator this project did
 * not write), as docs/release-permissions.md sets it up: the release stack deployed with the
 * caller's own credentials, then the pinned CDK bootstrap template with the parameters the
 * release stack's BootstrapCommand prints, then the stage's roles. moto's CloudFormation has no
 * AWS::IAM::OIDCProvider (the release stack is given an existing provider's ARN) and attaches no
 * ManagedPolicyArns (not even the bootstrap template's own), so neither is checked here.
 */
const STAGE = 'staging'
const ACCOUNT = '123456789012'
/**
 * A qualifier of its own: the management-API file shares this moto and has put the default
 * qualifier's bootstrap version parameter, which the template would create again.
 */
const QUALIFIER = 'relmoto'

/** An IAM query call to moto (no IAM client is a dependency of this project); its XML answer. */
const iam = async (action: string, params: Record<string, string>): Promise<string> => {
  const response = await fetch(motoEndpoint(), {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization:
        'AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }).toString(),
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`IAM ${action}: ${response.status} ${text}`)
  return text
}
const tag = (xml: string, name: string): string[] =>
  [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1] as string)

const createStack = async (
  cloudFormation: CloudFormationClient,
  name: string,
  body: unknown,
  parameters: Record<string, string> = {},
): Promise<Record<string, string>> => {
  await cloudFormation.send(
    new CreateStackCommand({
      StackName: name,
      TemplateBody: typeof body === 'string' ? body : JSON.stringify(body),
      Capabilities: ['CAPABILITY_NAMED_IAM'],
      Parameters: Object.entries(parameters).map(([ParameterKey, ParameterValue]) => ({
        ParameterKey,
        ParameterValue,
      })),
    }),
  )
  for (let attempt = 0; attempt < 60; attempt++) {
    const { Stacks = [] } = await cloudFormation.send(
      new DescribeStacksCommand({ StackName: name }),
    )
    const [stack] = Stacks
    if (!stack?.StackStatus?.endsWith('_IN_PROGRESS')) {
      expect(stack?.StackStatus, `${name}: ${stack?.StackStatusReason}`).toBe('CREATE_COMPLETE')
      return Object.fromEntries(
        (stack?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']),
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`${name} did not finish creating`)
}

let bootstrapCommand: string

beforeAll(async () => {
  const { cloudFormation } = motoClients()
  // The account is listed as having GitHub's provider: moto's CloudFormation cannot make one.
  const release = readReleaseConfig(
    (key) =>
      ({
        'release.githubRepository': 'acme/petstore',
        'release.nameSubject': true,
        'staging.account': ACCOUNT,
        'production.account': ACCOUNT,
        'release.oneAccountForBothStages': true,
        'release.accountsWithGitHubOidcProvider': [ACCOUNT],
        'release.productionApproval': 'reviewers',
      })[key],
  )
  if (!release) throw new Error('no release settings')
  const stack = new PetstoreReleaseStack(new App(), `petstore-release-${STAGE}`, {
    stage: STAGE,
    release,
  })
  const outputs = await createStack(
    cloudFormation,
    `petstore-release-${STAGE}`,
    Template.fromStack(stack).toJSON(),
  )
  bootstrapCommand = Object.entries(outputs).find(([key]) => key === 'BootstrapCommand')?.[1] ?? ''
})

describe('the least-privilege bootstrap in moto', () => {
  it('the release stack makes the execution policies, both boundaries and the release role', async () => {
    const policies = tag(await iam('ListPolicies', { Scope: 'Local' }), 'PolicyName')
    expect(policies.filter((name) => name.startsWith(`petstore-${STAGE}-`)).sort()).toEqual([
      `petstore-${STAGE}-bootstrap-boundary`,
      `petstore-${STAGE}-cfn-execution-1`,
      `petstore-${STAGE}-cfn-execution-2`,
      `petstore-${STAGE}-role-boundary`,
    ])
    const role = await iam('GetRole', { RoleName: `petstore-${STAGE}-release-us-east-1` })
    expect(tag(role, 'Path')).toEqual(['/'])
  })

  it('the pinned bootstrap template, given the printed parameters, puts the boundary on every bootstrap role', async () => {
    const { cloudFormation } = motoClients()
    const executionPolicies = [
      ...bootstrapCommand.matchAll(/--cloudformation-execution-policies (\S+)/g),
    ].map((m) => m[1] as string)
    const boundary = /--custom-permissions-boundary (\S+)/.exec(bootstrapCommand)?.[1] ?? ''
    expect(executionPolicies).toHaveLength(2)
    expect(bootstrapCommand).toContain('--apply-permissions-boundary-to-all-roles')
    const require = createRequire(import.meta.url)
    const template = readFileSync(
      join(
        require.resolve('aws-cdk/package.json'),
        '..',
        'lib/api/bootstrap/bootstrap-template.yaml',
      ),
      'utf8',
    )
    // The parameters `cdk bootstrap` passes for those flags (and an AWS-managed bucket key).
    await createStack(cloudFormation, 'CDKToolkit', template, {
      Qualifier: QUALIFIER,
      CloudFormationExecutionPolicies: executionPolicies.join(','),
      InputPermissionsBoundary: boundary,
      ApplyPermissionsBoundaryToAllRoles: 'true',
      FileAssetsBucketKmsKeyId: 'AWS_MANAGED_KEY',
    })
    for (const role of [
      'deploy-role',
      'file-publishing-role',
      'cfn-exec-role',
      'lookup-role',
      'image-publishing-role',
    ]) {
      const answer = await iam('GetRole', {
        RoleName: `cdk-${QUALIFIER}-${role}-${ACCOUNT}-us-east-1`,
      })
      expect(tag(answer, 'PermissionsBoundaryArn'), role).toEqual([
        `arn:aws:iam::${ACCOUNT}:policy/petstore-${STAGE}-bootstrap-boundary`,
      ])
    }
  })

  it("the stage's roles are created on the stage path with the stage's boundary", async () => {
    const { cloudFormation } = motoClients()
    const api = readTemplate(`petstore-${STAGE}-api`)
    const roles = Object.fromEntries(
      Object.entries(api.Resources).filter(([, resource]) => resource.Type === 'AWS::IAM::Role'),
    )
    expect(Object.keys(roles).length).toBeGreaterThan(3)
    await createStack(cloudFormation, `petstore-${STAGE}-roles`, { Resources: roles })
    const listed = await iam('ListRoles', { PathPrefix: stageRolePath(STAGE) })
    const names = tag(listed, 'RoleName')
    expect(names).toHaveLength(Object.keys(roles).length)
    for (const name of names) {
      const role = await iam('GetRole', { RoleName: name })
      expect(tag(role, 'PermissionsBoundaryArn'), name).toEqual([
        `arn:aws:iam::${ACCOUNT}:policy/${roleBoundaryName(STAGE)}`,
      ])
    }
  })
})
