// biome-ignore-all lint/suspicious/noTemplateCurlyInString: asset manifests write ${AWS::AccountId}
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { STACK_NAME_TAG } from '#infra/config/api-gateway-permissions-config.ts'
import { EXECUTION_PERMISSIONS, ROLE_SERVICES } from '#infra/config/execution-permissions-config.ts'
import { stageRolePath } from '#infra/config/release-permissions-config.ts'
import { POOL_PLAN_TAG, stageTags } from '#keys/usage-plans-config.ts'
import type { Evaluation, IamRequest } from '#local/iam/iam-policy-evaluator.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import { REPO_ROOT } from './support/cdk-json.ts'
import { deployedStage } from './support/deployed-names.ts'
import {
  ACCOUNT,
  type Identity,
  QUALIFIER,
  REGION,
  type ReleasePath,
  releasePath,
  scopeOf,
} from './support/release-path.ts'
import { appAssemblyDir, appStage, synthesizeApp } from './support/synth-app.ts'

/**
 * Issue 44's escalation table, evaluated with the project's IAM evaluator (local/iam) on what
 * ships: the release role (synthesized release stack), the CDK deploy and file-publishing roles
 * (the pinned bootstrap template, bootstrapped as docs/release-permissions.md says) and the
 * CloudFormation execution role (the execution policy), each under the bootstrap boundary. Every
 * forbidden act is denied to every one of them; everything a release of the synthesized stage
 * templates does is allowed to the identity that does it. docs/release-permissions.md shows the
 * same table (checked below).
 */
const STAGES = ['staging', 'production'] as const
const otherStage = (stage: string) => (stage === 'staging' ? 'production' : 'staging')
const stackArn = (name: string) =>
  `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${name}/0a1b2c3d-1111-2222-3333-444455556666`
const stack = stackArn
const iam = (resource: string) => `arn:aws:iam::${ACCOUNT}:${resource}`
const bootstrapRoleArn = (name: string) => iam(`role/cdk-${QUALIFIER}-${name}-${ACCOUNT}-${REGION}`)
const apigateway = (path: string) => `arn:aws:apigateway:${REGION}::${path}`
/** TagResource's and UntagResource's resource: the tagged resource's ARN, URL-encoded. */
const tagsOf = (arn: string) => apigateway(`/tags/${encodeURIComponent(arn)}`)
const CUSTOMER_KEY = apigateway('/apikeys/a1b2c3d4e5')

/** A request's tags as IAM sees them: each as aws:RequestTag/<key>, their keys as aws:TagKeys. */
const requestTags = (tags: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:RequestTag/${k}`, v])),
  'aws:TagKeys': Object.keys(tags),
})
/** A resource's tags as IAM sees them. */
const resourceTags = (tags: Record<string, string>) =>
  Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:ResourceTag/${k}`, v]))
/** CloudFormation's system tags on what a stack creates (no one else can set an `aws:` tag). */
const systemTags = (stack: string, logicalId: string) => ({
  [STACK_NAME_TAG]: stack,
  'aws:cloudformation:logical-id': logicalId,
  'aws:cloudformation:stack-id': stackArn(stack),
})
/** A customer's key after a release gave it every tag it may put on a key. */
const forgedPoolKeyTags = (stage: string) =>
  resourceTags({ ...stageTags(stage), [POOL_PLAN_TAG.key]: POOL_PLAN_TAG.value })
/** Plans customers' keys are on: the stage's own Free plan, and a customer's plan made in the console. */
const customersPlans = (stage: string) => [
  {
    plan: 'freeplan01',
    tags: resourceTags({
      ...stageTags(stage),
      'petstore:plan': 'free',
      ...systemTags(`petstore-${stage}-api`, 'ApiUsagePlanfree'),
    }),
  },
  {
    plan: 'acmeplan01',
    tags: resourceTags({ 'petstore:plan': 'enterprise', 'petstore:customer': 'acme' }),
  },
]

interface ForbiddenAct {
  act: string
  requests: (stage: string, path: ReleasePath) => IamRequest[]
}

/** The roles the release stack makes for GitHub's jobs: the deploy role, and production's plan role. */
const releaseRoles = (path: ReleasePath): Identity[] =>
  [path.releaseRole, path.planRole].filter((role): role is Identity => role !== undefined)

/** The acts issue 44 lists, each as the IAM requests that would do it (in staging's account). */
const FORBIDDEN: ForbiddenAct[] = [
  {
    act: 'update or delete `petstore-release-*`',
    requests: (stage) =>
      [
        'cloudformation:UpdateStack',
        'cloudformation:CreateChangeSet',
        'cloudformation:ExecuteChangeSet',
        'cloudformation:DeleteStack',
      ].map((action) => ({ action, resource: stack(`petstore-release-${stage}`) })),
  },
  {
    act: "change the release role's policies",
    requests: (_stage, path) =>
      [
        'iam:PutRolePolicy',
        'iam:AttachRolePolicy',
        'iam:DeleteRolePolicy',
        'iam:DetachRolePolicy',
        'iam:DeleteRolePermissionsBoundary',
      ].flatMap((action) => releaseRoles(path).map((role) => ({ action, resource: role.arn }))),
  },
  {
    act: "change the release role's trust",
    requests: (_stage, path) => [
      ...releaseRoles(path).map((role) => ({
        action: 'iam:UpdateAssumeRolePolicy',
        resource: role.arn,
      })),
      {
        action: 'iam:AddClientIDToOpenIDConnectProvider',
        resource: iam('oidc-provider/token.actions.githubusercontent.com'),
      },
    ],
  },
  {
    act: 'touch the `CDKToolkit` stack',
    requests: () =>
      [
        'cloudformation:UpdateStack',
        'cloudformation:CreateChangeSet',
        'cloudformation:DeleteStack',
      ].map((action) => ({ action, resource: stack('CDKToolkit') })),
  },
  {
    act: 'touch its roles',
    requests: () =>
      ['deploy-role', 'cfn-exec-role', 'file-publishing-role'].flatMap((role) =>
        [
          'iam:PutRolePolicy',
          'iam:AttachRolePolicy',
          'iam:UpdateAssumeRolePolicy',
          'iam:DeleteRole',
        ].map((action) => ({ action, resource: bootstrapRoleArn(role) })),
      ),
  },
  {
    act: 'change the execution policy or a boundary',
    requests: (stage) =>
      [
        `petstore-${stage}-cfn-execution-1`,
        `petstore-${stage}-role-boundary`,
        `petstore-${stage}-bootstrap-boundary`,
      ].flatMap((name) =>
        ['iam:CreatePolicyVersion', 'iam:SetDefaultPolicyVersion', 'iam:DeletePolicy'].map(
          (action) => ({ action, resource: iam(`policy/${name}`) }),
        ),
      ),
  },
  {
    act: 'create an IAM user',
    requests: () => [{ action: 'iam:CreateUser', resource: iam('user/intruder') }],
  },
  {
    act: 'create an access key',
    requests: () => [
      { action: 'iam:CreateAccessKey', resource: iam('user/intruder') },
      { action: 'iam:CreateLoginProfile', resource: iam('user/intruder') },
    ],
  },
  {
    act: 'create a role without the boundary',
    requests: (stage) => [
      { action: 'iam:CreateRole', resource: iam(`role${stageRolePath(stage)}escape`) },
      {
        action: 'iam:CreateRole',
        resource: iam(`role${stageRolePath(stage)}escape`),
        context: { 'iam:PermissionsBoundary': iam('policy/petstore-any-boundary-but-ours') },
      },
      {
        // The stage's boundary, but outside the stage's path: not a role the stage may make.
        action: 'iam:CreateRole',
        resource: iam('role/escape'),
        context: { 'iam:PermissionsBoundary': iam(`policy/petstore-${stage}-role-boundary`) },
      },
      {
        action: 'iam:DeleteRolePermissionsBoundary',
        resource: iam(`role${stageRolePath(stage)}x`),
      },
    ],
  },
  {
    act: 'attach AdministratorAccess',
    requests: (stage) => [
      {
        action: 'iam:AttachRolePolicy',
        resource: iam(`role${stageRolePath(stage)}x`),
        context: { 'iam:PolicyARN': 'arn:aws:iam::aws:policy/AdministratorAccess' },
      },
      {
        action: 'iam:PutRolePolicy',
        resource: iam('role/cdk-hnb659fds-cfn-exec-role-111111111111-eu-west-1'),
      },
    ],
  },
  {
    act: "read a customer's key value",
    requests: (stage) => [
      { action: 'apigateway:GET', resource: CUSTOMER_KEY },
      // A customer's key given every tag a release may put on a key (the pool key's own).
      { action: 'apigateway:GET', resource: CUSTOMER_KEY, context: forgedPoolKeyTags(stage) },
      { action: 'apigateway:GET', resource: apigateway('/apikeys') },
      // GetUsagePlanKeys and GetUsagePlanKey return the keys' values.
      ...customersPlans(stage).flatMap(({ plan, tags }) => [
        {
          action: 'apigateway:GET',
          resource: apigateway(`/usageplans/${plan}/keys`),
          context: tags,
        },
        {
          action: 'apigateway:GET',
          resource: apigateway(`/usageplans/${plan}/keys/a1b2c3d4e5`),
          context: tags,
        },
      ]),
    ],
  },
  {
    act: "change, disable or delete a customer's key",
    requests: (stage) =>
      ['apigateway:PATCH', 'apigateway:DELETE'].flatMap((action) => [
        { action, resource: CUSTOMER_KEY },
        { action, resource: CUSTOMER_KEY, context: forgedPoolKeyTags(stage) },
      ]),
  },
  {
    act: "tag or untag a customer's key (`petstore:disableAfter` ends it)",
    requests: () => [
      {
        action: 'apigateway:PUT',
        resource: tagsOf(CUSTOMER_KEY),
        context: requestTags({ 'petstore:disableAfter': '2026-01-01T00:00:00Z' }),
      },
      {
        action: 'apigateway:DELETE',
        resource: tagsOf(CUSTOMER_KEY),
        context: { 'aws:TagKeys': ['petstore:disableAfter'] },
      },
    ],
  },
  {
    act: "detach a customer's key from its plan, or attach it to another customer plan",
    requests: (stage) =>
      customersPlans(stage).flatMap(({ plan, tags }) => [
        {
          action: 'apigateway:DELETE',
          resource: apigateway(`/usageplans/${plan}/keys/a1b2c3d4e5`),
          context: tags,
        },
        {
          action: 'apigateway:POST',
          resource: apigateway(`/usageplans/${plan}/keys`),
          context: tags,
        },
      ]),
  },
  {
    // The execution policy holds WAF IP sets to the stage's own names (the automatic block's
    // lists and the operator's): not another stage's, not one the project did not make.
    act: "change another stage's WAF block lists, or an IP set not the project's",
    requests: (stage) =>
      [
        `petstore-${otherStage(stage)}-blocked-addresses`,
        `petstore-${otherStage(stage)}-auto-blocked-ipv4`,
        'corporate-allow-list',
      ].flatMap((name) =>
        ['wafv2:UpdateIPSet', 'wafv2:DeleteIPSet'].map((action) => ({
          action,
          resource: `arn:aws:wafv2:${REGION}:${ACCOUNT}:regional/ipset/${name}/0a1b2c3d`,
        })),
      ),
  },
  {
    // The access log's subscription to the address-block function: the stage's own log groups
    // only, so no release sends another stage's logs, or the account's, anywhere.
    act: 'subscribe a log group outside the stage to a destination',
    requests: (stage) =>
      [
        `/petstore/${otherStage(stage)}/api-access`,
        '/aws/lambda/billing',
        'aws-cloudtrail-logs',
      ].map((name) => ({
        action: 'logs:PutSubscriptionFilter',
        resource: `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${name}:*`,
      })),
  },
  {
    act: "turn off production's termination protection",
    requests: () =>
      ['petstore-production-api', 'petstore-production-data'].map((name) => ({
        action: 'cloudformation:UpdateTerminationProtection',
        resource: stack(name),
      })),
  },
  {
    act: "delete production's data stack",
    requests: () => [
      { action: 'cloudformation:DeleteStack', resource: stack('petstore-production-data') },
    ],
  },
]

const identities = (path: ReleasePath): Identity[] => [
  path.releaseRole,
  path.deployRole,
  path.filePublishingRole,
  path.executionRole,
]

/** How an identity answers an act: the most permissive answer over its requests. */
const verdict = (identity: Identity, requests: IamRequest[]): Evaluation => {
  const answers = requests.map((request) => identity.policies.evaluate(request))
  return (
    answers.find((a) => a.decision === 'allow') ??
    answers.find((a) => a.decision === 'implicit-deny') ??
    (answers[0] as Evaluation)
  )
}

const cell = (evaluation: Evaluation): string =>
  evaluation.decision === 'allow'
    ? 'ALLOW'
    : evaluation.decision === 'explicit-deny'
      ? `Deny (${evaluation.statement?.sid ?? 'explicit'})`
      : 'Deny (implicit)'

/** The table as docs/release-permissions.md shows it (staging's account; production's is the same). */
const escalationTable = (stage: StageName): string[] => {
  const path = releasePath(stage)
  return FORBIDDEN.map(({ act, requests }) => {
    const cells = identities(path).map((identity) => cell(verdict(identity, requests(stage, path))))
    return `| ${act} | ${cells.join(' | ')} |`
  })
}

describe('the escalation table: every forbidden act is denied on the release path', () => {
  for (const stage of STAGES) {
    const path = releasePath(stage)
    for (const { act, requests } of FORBIDDEN) {
      const row = identities(path)
        .map((identity) => `${identity.name}: ${cell(verdict(identity, requests(stage, path)))}`)
        .join('; ')
      it(`${stage}: ${act} → ${row}`, () => {
        for (const identity of identities(path)) {
          for (const request of requests(stage, path)) {
            const { decision, reason } = identity.policies.evaluate(request)
            expect(
              decision,
              `${identity.name}: ${request.action} on ${request.resource}: ${reason}`,
            ).not.toBe('allow')
          }
        }
      })
    }
  }

  it('is the table docs/release-permissions.md shows', () => {
    const doc = readFileSync(join(REPO_ROOT, 'docs/release-permissions.md'), 'utf8')
    const rows = escalationTable('staging')
    expect(
      rows.filter((row) => !doc.includes(row)),
      'docs/release-permissions.md, "The escalation table": put these rows there',
    ).toEqual([])
    // Production's account answers the same.
    expect(escalationTable('production')).toEqual(
      rows.map((row) => row.replaceAll('staging', 'production')),
    )
  })
})

/** What a release of the synthesized stage templates does, each act with the identity that does it. */
const releaseActs = (
  stage: StageName,
  { data, api } = appStage(stage),
): { who: keyof ReleasePath; what: string; request: IamRequest }[] => {
  const scope = scopeOf(stage)
  const stacks = { [`petstore-${stage}-data`]: data, [`petstore-${stage}-api`]: api }
  const deployed = deployedStage(scope, stacks)
  const acts: { who: keyof ReleasePath; what: string; request: IamRequest }[] = []
  const add = (who: keyof ReleasePath, what: string, request: IamRequest) =>
    acts.push({ who, what, request })
  for (const name of Object.keys(stacks)) {
    add('releaseRole', 'the smoke test reads the stage outputs', {
      action: 'cloudformation:DescribeStacks',
      resource: stack(name),
    })
    for (const action of [
      'cloudformation:DescribeStacks',
      'cloudformation:GetTemplate',
      'cloudformation:CreateChangeSet',
      'cloudformation:DescribeChangeSet',
      'cloudformation:ExecuteChangeSet',
      'cloudformation:DeleteChangeSet',
      'cloudformation:DescribeStackEvents',
    ]) {
      add('deployRole', `cdk deploy ${name}`, { action, resource: stack(name) })
    }
    // Production's first deploy (`--method=direct`) creates its stacks with termination protection.
    if (stage === 'production') {
      add('deployRole', `first deploy of ${name}`, {
        action: 'cloudformation:CreateStack',
        resource: stack(name),
      })
    }
  }
  for (const role of ['deploy-role', 'file-publishing-role']) {
    add('releaseRole', 'cdk deploy assumes the bootstrap role', {
      action: 'sts:AssumeRole',
      resource: bootstrapRoleArn(role),
    })
  }
  add('deployRole', 'cdk deploy passes the execution role', {
    action: 'iam:PassRole',
    resource: bootstrapRoleArn('cfn-exec-role'),
  })
  add('deployRole', 'CloudFormation reads the bootstrap version', {
    action: 'ssm:GetParameters',
    resource: `arn:aws:ssm:${REGION}:${ACCOUNT}:parameter/cdk-bootstrap/${QUALIFIER}/version`,
  })
  // Every asset the assembly's manifests publish, to the destination they name.
  for (const name of Object.keys(stacks)) {
    const manifest = JSON.parse(
      readFileSync(join(appAssemblyDir(), `${name}.assets.json`), 'utf8'),
    ) as {
      files: Record<
        string,
        { destinations: Record<string, { bucketName: string; objectKey: string }> }
      >
    }
    for (const file of Object.values(manifest.files)) {
      for (const destination of Object.values(file.destinations)) {
        const bucket = destination.bucketName
          .replace('${AWS::AccountId}', ACCOUNT)
          .replace('${AWS::Region}', REGION)
        add('filePublishingRole', `publish ${destination.objectKey}`, {
          action: 's3:PutObject',
          resource: `arn:aws:s3:::${bucket}/${destination.objectKey}`,
          context: { 'aws:ResourceAccount': ACCOUNT },
        })
      }
    }
  }
  for (const resource of deployed.resources) {
    const properties = deployed.resolve(resource.stack, resource.properties) as Record<
      string,
      unknown
    >
    const entry = EXECUTION_PERMISSIONS[resource.type]
    if (!entry) throw new Error(`${resource.type}: no execution permissions entry`)
    const what = `${resource.type} ${resource.logicalId}`
    // The pool key and its place on the pool plan: rights scoped by tags, so each act with the
    // tags IAM sees (the template's and CloudFormation's system tags).
    const tagsOfResource = (r: { stack: string; logicalId: string; properties: unknown }) => ({
      ...Object.fromEntries(
        (
          ((deployed.resolve(r.stack, r.properties) as { Tags?: unknown }).Tags ?? []) as {
            Key: string
            Value: string
          }[]
        ).map((tag) => [tag.Key, tag.Value]),
      ),
      ...systemTags(r.stack, r.logicalId),
    })
    if (resource.type === 'AWS::SNS::Subscription') {
      add('executionRole', `${what}: subscribed`, {
        action: 'sns:Subscribe',
        resource: properties.TopicArn as string,
        context: { 'sns:Protocol': properties.Protocol as string },
      })
      for (const action of ['sns:Unsubscribe', 'sns:GetSubscriptionAttributes']) {
        add('executionRole', what, { action, resource: resource.arn })
      }
      continue
    }
    if (resource.type === 'AWS::ApiGateway::ApiKey') {
      const tags = tagsOfResource(resource)
      add('executionRole', `${what}: created`, {
        action: 'apigateway:POST',
        resource: apigateway('/apikeys'),
        context: requestTags(tags),
      })
      add('executionRole', `${what}: tagged on create`, {
        action: 'apigateway:PUT',
        resource: tagsOf(resource.arn),
        context: requestTags(tags),
      })
      for (const action of ['apigateway:GET', 'apigateway:PATCH', 'apigateway:DELETE']) {
        add('executionRole', what, { action, resource: resource.arn, context: resourceTags(tags) })
      }
      continue
    }
    if (resource.type === 'AWS::ApiGateway::UsagePlanKey') {
      const planId = deployed.resolve(resource.stack, properties.UsagePlanId)
      const plan = deployed.resources.find(
        (r) => r.type === 'AWS::ApiGateway::UsagePlan' && r.ref === planId,
      )
      if (!plan) throw new Error(`${what}: no usage plan ${String(planId)}`)
      // A plan's keys carry their plan's tags for access control.
      const context = resourceTags(tagsOfResource(plan))
      add('executionRole', `${what}: attached`, {
        action: 'apigateway:POST',
        resource: apigateway(`/usageplans/${planId}/keys`),
        context,
      })
      for (const action of ['apigateway:GET', 'apigateway:DELETE']) {
        add('executionRole', what, { action, resource: resource.arn, context })
      }
      continue
    }
    // The type's management actions, on this resource as CloudFormation names it.
    const actions = new Set(
      entry
        .statements(scope)
        .filter((statement) => statement.effect !== 'Deny')
        .flatMap((statement) => statement.actions),
    )
    for (const action of actions) {
      if (
        action.startsWith('iam:') ||
        action.startsWith('s3:') ||
        action.includes('GetRandomPassword')
      )
        continue
      if (action === 'logs:DescribeLogGroups' || action === 'codedeploy:GetDeploymentConfig')
        continue
      if (action === 'apigateway:SetWebACL') continue
      add('executionRole', what, { action, resource: resource.arn })
    }
    if (resource.type === 'AWS::IAM::Role') {
      add('executionRole', `${what}: created with its boundary`, {
        action: 'iam:CreateRole',
        resource: resource.arn,
        context: { 'iam:PermissionsBoundary': properties.PermissionsBoundary as string },
      })
      for (const arn of (properties.ManagedPolicyArns as string[] | undefined) ?? []) {
        add('executionRole', `${what}: attach ${arn}`, {
          action: 'iam:AttachRolePolicy',
          resource: resource.arn,
          context: { 'iam:PolicyARN': arn },
        })
      }
      const trust = properties.AssumeRolePolicyDocument as {
        Statement: { Principal: { Service?: string } }[]
      }
      for (const service of trust.Statement.map((s) => s.Principal.Service).filter(Boolean)) {
        expect(ROLE_SERVICES).toContain(service)
        add('executionRole', `${what}: passed to ${service}`, {
          action: 'iam:PassRole',
          resource: resource.arn,
          context: { 'iam:PassedToService': service as string },
        })
      }
    }
    if (resource.type === 'AWS::IAM::Policy') {
      for (const roleName of properties.Roles as string[]) {
        const role = deployed.resources.find(
          (r) => r.type === 'AWS::IAM::Role' && r.ref === roleName,
        )
        add('executionRole', `${what}: on ${roleName}`, {
          action: 'iam:PutRolePolicy',
          resource: role?.arn ?? 'unknown',
        })
      }
    }
    if (resource.type === 'AWS::Lambda::Function') {
      const code = properties.Code as { S3Bucket: string; S3Key: string }
      add('executionRole', `${what}: its bundle`, {
        action: 's3:GetObject',
        resource: `arn:aws:s3:::${code.S3Bucket}/${code.S3Key}`,
      })
    }
  }
  return acts
}

/** What the path refuses of a release's acts, each named. */
const refusedOf = (stage: StageName, acts: ReturnType<typeof releaseActs>): string[] => {
  const path = releasePath(stage)
  return acts
    .map(({ who, what, request }) => ({
      who,
      what,
      request,
      answer: (path[who] as Identity).policies.evaluate(request),
    }))
    .filter(({ answer }) => answer.decision !== 'allow')
    .map(
      ({ who, what, request, answer }) =>
        `${who}, ${what}: ${request.action} on ${request.resource} (${answer.reason})`,
    )
}

describe('the release path allows everything a release of the synthesized stage templates does', () => {
  it('production with an alarm email: its subscription too', () => {
    const withEmail = synthesizeApp({
      stage: 'production',
      'production.alarmEmail': 'ops@example.com',
    }).stage('production')
    const acts = releaseActs('production', { data: withEmail.data, api: withEmail.api })
    expect(acts.filter(({ what }) => what.includes('AWS::SNS::Subscription'))).toHaveLength(3)
    expect(refusedOf('production', acts)).toEqual([])
  })

  it.each(STAGES)('%s: every act, by the identity that makes it', (stage) => {
    const path = releasePath(stage)
    const acts = releaseActs(stage)
    expect(acts.length).toBeGreaterThan(600)
    const refused = acts
      .map(({ who, what, request }) => ({
        who,
        what,
        request,
        answer: (path[who] as Identity).policies.evaluate(request),
      }))
      .filter(({ answer }) => answer.decision !== 'allow')
      .map(
        ({ who, what, request, answer }) =>
          `${who}, ${what}: ${request.action} on ${request.resource} (${answer.reason})`,
      )
    expect(refused).toEqual([])
  })
})

/**
 * Production's plan role (docs/release-permissions.md, "The production plan role"): everything
 * `cdk deploy --method=prepare-change-set` does is allowed to it, and nothing that executes a
 * change or could: every act below either is what preparing takes, or is denied.
 */
const PLAN_ACTS: {
  act: string
  allowed: boolean
  requests: (path: ReleasePath) => IamRequest[]
}[] = [
  {
    act: "create production's change sets, run by the execution role",
    allowed: true,
    requests: () =>
      ['petstore-production-data', 'petstore-production-api'].map((name) => ({
        action: 'cloudformation:CreateChangeSet',
        resource: stack(name),
        context: { 'cloudformation:RoleArn': bootstrapRoleArn('cfn-exec-role') },
      })),
  },
  {
    act: 'describe, list and delete them; read the stacks, their events and templates',
    allowed: true,
    requests: () =>
      [
        'cloudformation:DescribeChangeSet',
        'cloudformation:ListChangeSets',
        'cloudformation:DeleteChangeSet',
        'cloudformation:DescribeStacks',
        'cloudformation:DescribeStackEvents',
        'cloudformation:GetTemplate',
      ].flatMap((action) =>
        ['petstore-production-data', 'petstore-production-api'].map((name) => ({
          action,
          resource: stack(name),
        })),
      ),
  },
  {
    act: 'pass the execution role to CloudFormation',
    allowed: true,
    requests: () => [
      {
        action: 'iam:PassRole',
        resource: bootstrapRoleArn('cfn-exec-role'),
        context: { 'iam:PassedToService': 'cloudformation.amazonaws.com' },
      },
    ],
  },
  {
    act: 'publish the assets (the file-publishing role), read the bootstrap version and the templates',
    allowed: true,
    requests: () => [
      { action: 'sts:AssumeRole', resource: bootstrapRoleArn('file-publishing-role') },
      {
        action: 'ssm:GetParameter',
        resource: `arn:aws:ssm:${REGION}:${ACCOUNT}:parameter/cdk-bootstrap/${QUALIFIER}/version`,
      },
      {
        action: 's3:GetObject',
        resource: `arn:aws:s3:::cdk-${QUALIFIER}-assets-${ACCOUNT}-${REGION}/abc.json`,
      },
    ],
  },
  {
    act: 'execute a change set',
    allowed: false,
    requests: () =>
      ['petstore-production-data', 'petstore-production-api'].map((name) => ({
        action: 'cloudformation:ExecuteChangeSet',
        resource: stack(name),
      })),
  },
  {
    act: 'create, update, delete or roll back a stack directly',
    allowed: false,
    requests: () =>
      [
        'cloudformation:CreateStack',
        'cloudformation:UpdateStack',
        'cloudformation:DeleteStack',
        'cloudformation:RollbackStack',
        'cloudformation:ContinueUpdateRollback',
        'cloudformation:UpdateTerminationProtection',
      ].map((action) => ({ action, resource: stack('petstore-production-api') })),
  },
  {
    act: 'assume the deploy role (which executes)',
    allowed: false,
    requests: () => [{ action: 'sts:AssumeRole', resource: bootstrapRoleArn('deploy-role') }],
  },
  {
    act: 'prepare a change set CloudFormation would run as another role, or as itself',
    allowed: false,
    requests: () => [
      {
        action: 'cloudformation:CreateChangeSet',
        resource: stack('petstore-production-api'),
        context: { 'cloudformation:RoleArn': iam('role/Admin') },
      },
      { action: 'cloudformation:CreateChangeSet', resource: stack('petstore-production-api') },
      {
        action: 'iam:PassRole',
        resource: bootstrapRoleArn('cfn-exec-role'),
        context: { 'iam:PassedToService': 'lambda.amazonaws.com' },
      },
    ],
  },
  {
    act: "prepare a change set of any other stack (staging's, a release stack, `CDKToolkit`)",
    allowed: false,
    requests: () =>
      ['petstore-staging-api', 'petstore-release-production', 'CDKToolkit'].map((name) => ({
        action: 'cloudformation:CreateChangeSet',
        resource: stack(name),
        context: { 'cloudformation:RoleArn': bootstrapRoleArn('cfn-exec-role') },
      })),
  },
]

const planRoleOf = (stage: StageName): Identity => {
  const role = releasePath(stage).planRole
  if (!role) throw new Error(`${stage}'s release stack makes no plan role`)
  return role
}

/** The plan role's table as docs/release-permissions.md shows it. */
const planTable = (): string[] =>
  PLAN_ACTS.map(({ act, requests }) => {
    const path = releasePath('production')
    const answer = cell(verdict(planRoleOf('production'), requests(path)))
    return `| ${act} | ${answer === 'ALLOW' ? 'Allow' : answer} |`
  })

describe("production's plan role prepares change sets and executes none", () => {
  for (const { act, allowed, requests } of PLAN_ACTS) {
    it(`${act} → ${allowed ? 'allowed' : 'denied'}`, () => {
      const path = releasePath('production')
      const answers = requests(path).map((request) => ({
        request,
        answer: planRoleOf('production').policies.evaluate(request),
      }))
      const wrong = answers.filter(({ answer }) => (answer.decision === 'allow') !== allowed)
      expect(
        wrong.map(
          ({ request, answer }) => `${request.action} on ${request.resource}: ${answer.reason}`,
        ),
      ).toEqual([])
    })
  }

  it('is denied every forbidden act too', () => {
    const path = releasePath('production')
    const allowed = FORBIDDEN.flatMap(({ act, requests }) =>
      requests('production', path)
        .filter(
          (request) => planRoleOf('production').policies.evaluate(request).decision === 'allow',
        )
        .map((request) => `${act}: ${request.action} on ${request.resource}`),
    )
    expect(allowed).toEqual([])
  })

  it('exists in production only, and is the table docs/release-permissions.md shows', () => {
    expect(releasePath('staging').planRole).toBeUndefined()
    const doc = readFileSync(join(REPO_ROOT, 'docs/release-permissions.md'), 'utf8')
    expect(
      planTable().filter((row) => !doc.includes(row)),
      'docs/release-permissions.md, "The production plan role": put these rows there',
    ).toEqual([])
  })
})
