import { describe, expect, it } from 'vitest'
import { EXECUTION_PERMISSIONS } from '#infra/config/execution-permissions-config.ts'
import { stageRolePath } from '#infra/config/release-permissions-config.ts'
import { compilePolicies, type PolicyDocument } from '#local/iam/iam-policy-evaluator.ts'
import { ROLE_BOUNDARY_ACTIONS, roleBoundaryName } from '#shared/config/role-boundary-config.ts'
import { bootstrapTemplate } from './support/bootstrap-template.ts'
import { asPolicy, deployedStage } from './support/deployed-names.ts'
import { releasePath, releaseTemplate, scopeOf } from './support/release-path.ts'
import { appStage, propsOf, resourcesOf, synthesizeApp } from './support/synth-app.ts'

/**
 * The least-privilege bootstrap (docs/release-permissions.md): an execution policy that covers
 * every resource type of the stage templates and no other, a permissions boundary on every role
 * the stage stacks create, wide enough for what those roles do, and release stacks the release
 * path cannot reach.
 */
const STAGES = ['staging', 'production'] as const
const TABLE = 'infra/config/execution-permissions-config.ts'
const BOUNDARY = 'shared/config/role-boundary-config.ts'

/** Both stages as app.ts synthesizes them, and production with a custom domain (Route 53). */
const stageTemplates = () => {
  const domain = synthesizeApp({
    stage: 'production',
    'production.domainName': 'api.example.com',
    'production.certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
    'production.hostedZoneId': 'Z123456ABCDEFG',
    'production.hostedZoneName': 'example.com',
  }).stage('production')
  // An alarm email (the docs' own examples set one): an SNS subscription.
  const email = synthesizeApp({
    stage: 'production',
    'production.alarmEmail': 'ops@example.com',
  }).stage('production')
  return {
    staging: appStage('staging'),
    production: appStage('production'),
    'production with a custom domain': { data: domain.data, api: domain.api },
    'production with an alarm email': { data: email.data, api: email.api },
  }
}

describe('the CloudFormation execution policy', () => {
  const variants = stageTemplates()
  const typesIn = (templates: { data: { toJSON(): unknown }; api: { toJSON(): unknown } }) =>
    [templates.data, templates.api].flatMap((template) =>
      Object.values(
        (template.toJSON() as { Resources: Record<string, { Type: string }> }).Resources,
      )
        .map((resource) => resource.Type)
        .filter((type) => type !== 'AWS::CDK::Metadata'),
    )

  it('has an entry for every resource type of the stage templates', () => {
    const missing = Object.entries(variants).flatMap(([variant, templates]) =>
      [...new Set(typesIn(templates))]
        .filter((type) => !(type in EXECUTION_PERMISSIONS))
        .map(
          (type) =>
            `${type} (${variant}): add its entry to EXECUTION_PERMISSIONS in ${TABLE}, then deploy the release stacks before releasing`,
        ),
    )
    expect(missing).toEqual([])
  })

  it('has no entry for a type no stage template holds', () => {
    const used = new Set(Object.values(variants).flatMap(typesIn))
    const unused = Object.keys(EXECUTION_PERMISSIONS).filter((type) => !used.has(type))
    expect(unused, `remove these entries from EXECUTION_PERMISSIONS in ${TABLE}`).toEqual([])
  })

  it('is what the release stack deploys, split into managed policies IAM accepts', () => {
    for (const stage of STAGES) {
      const { managedPolicies } = releasePath(stage)
      const execution = Object.entries(managedPolicies).filter(([name]) =>
        name.startsWith(`petstore-${stage}-cfn-execution-`),
      )
      expect(execution.length).toBeGreaterThan(0)
      // "You can add up to 10 managed policies to a role" by default (IAM quotas).
      expect(execution.length).toBeLessThanOrEqual(8)
      for (const [, document] of execution) {
        // A managed policy is at most 6,144 characters, whitespace not counted (IAM quotas).
        expect(JSON.stringify(document).replace(/\s/g, '').length).toBeLessThanOrEqual(6144)
      }
    }
  })
})

describe('the permissions boundary of the stage roles', () => {
  it.each(STAGES)(
    'is on every AWS::IAM::Role of %s, with the stage path the execution policy names',
    (stage) => {
      const { data, api } = appStage(stage)
      const roles = [...resourcesOf(data, 'AWS::IAM::Role'), ...resourcesOf(api, 'AWS::IAM::Role')]
      expect(roles.length).toBeGreaterThan(5)
      const boundary = {
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':iam::',
            { Ref: 'AWS::AccountId' },
            `:policy/${roleBoundaryName(stage)}`,
          ],
        ],
      }
      const wrong = roles
        .filter(
          ([, role]) =>
            JSON.stringify(role.Properties?.PermissionsBoundary) !== JSON.stringify(boundary) ||
            role.Properties?.Path !== stageRolePath(stage),
        )
        .map(([id]) => id)
      expect(wrong).toEqual([])
    },
  )

  it.each(STAGES)("allows everything the %s roles' own policies grant", (stage) => {
    const scope = scopeOf(stage)
    const { data, api } = appStage(stage)
    const stacks = { [`petstore-${stage}-data`]: data, [`petstore-${stage}-api`]: api }
    const deployed = deployedStage(scope, stacks)
    const boundary = releasePath(stage).managedPolicies[roleBoundaryName(stage)] as PolicyDocument
    const refused: string[] = []
    for (const resource of deployed.resources.filter((r) => r.type === 'AWS::IAM::Policy')) {
      const policy = asPolicy(
        (deployed.resolve(resource.stack, resource.properties) as { PolicyDocument: unknown })
          .PolicyDocument,
      )
      const role = compilePolicies({ identityPolicies: [policy], permissionsBoundary: boundary })
      for (const statement of [policy.Statement].flat()) {
        for (const action of [statement.Action ?? []].flat()) {
          for (const target of [statement.Resource ?? []].flat()) {
            const resourceArn = target.replaceAll('*', 'x')
            // The statement's own condition keys, given as the statement asks for them.
            const context = Object.fromEntries(
              Object.values(statement.Condition ?? {}).flatMap((keys) =>
                Object.entries(keys).map(([key, value]) => [key, value as string[]]),
              ),
            )
            const decision = role.evaluate({ action, resource: resourceArn, context })
            if (decision.decision !== 'allow') {
              refused.push(
                `${resource.logicalId}: ${action} on ${resourceArn} (${decision.reason})`,
              )
            }
          }
        }
      }
    }
    expect(
      refused,
      `add the action to ROLE_BOUNDARY_ACTIONS in ${BOUNDARY} (and deploy the release stacks)`,
    ).toEqual([])
  })

  it('allows the AWS managed policies the stage attaches to its CodeDeploy and API Gateway roles, and no action no role holds', () => {
    // Their documents, as the AWS Managed Policy Reference gives them.
    const managed: Record<string, string[]> = {
      AWSCodeDeployRoleForLambdaLimited: [
        'cloudwatch:DescribeAlarms',
        'lambda:UpdateAlias',
        'lambda:GetAlias',
        'lambda:GetProvisionedConcurrencyConfig',
        's3:GetObject',
        's3:GetObjectVersion',
        'lambda:InvokeFunction',
      ],
      AmazonAPIGatewayPushToCloudWatchLogs: [
        'logs:CreateLogGroup',
        'logs:CreateLogStream',
        'logs:DescribeLogGroups',
        'logs:DescribeLogStreams',
        'logs:PutLogEvents',
        'logs:GetLogEvents',
        'logs:FilterLogEvents',
      ],
    }
    const allowed = new Set(Object.values(ROLE_BOUNDARY_ACTIONS).flat())
    const attached = new Set(
      STAGES.flatMap((stage) =>
        resourcesOf(appStage(stage).api, 'AWS::IAM::Role').flatMap(([, role]) =>
          ((role.Properties?.ManagedPolicyArns as unknown[]) ?? []).map((arn) =>
            JSON.stringify(arn).replace(/.*policy\/(service-role\/)?([A-Za-z]+).*/, '$2'),
          ),
        ),
      ),
    )
    expect([...attached].sort()).toEqual(Object.keys(managed).sort())
    expect(
      Object.values(managed)
        .flat()
        .filter((action) => !allowed.has(action)),
    ).toEqual([])
    // And nothing beyond: every action of the boundary is one a stage role holds.
    const held = new Set([
      ...Object.values(managed).flat(),
      ...STAGES.flatMap((stage) =>
        [appStage(stage).data, appStage(stage).api].flatMap((template) =>
          resourcesOf(template, 'AWS::IAM::Policy').flatMap(([, policy]) =>
            (
              propsOf(policy).PolicyDocument as { Statement: { Action: string | string[] }[] }
            ).Statement.flatMap((statement) => [statement.Action].flat()),
          ),
        ),
      ),
    ])
    expect(
      [...allowed].filter((action) => !held.has(action)),
      `no stage role holds these: remove them from ROLE_BOUNDARY_ACTIONS in ${BOUNDARY}`,
    ).toEqual([])
  })
})

describe('the release stacks', () => {
  it.each(STAGES)(
    'of %s deploy with an administrator’s own credentials: no bootstrap role, no bootstrap version',
    (stage) => {
      const template = releaseTemplate(stage).toJSON() as {
        Parameters?: Record<string, unknown>
        Rules?: Record<string, unknown>
      }
      // The default synthesizer adds the BootstrapVersion parameter and rule; the legacy one,
      // whose stacks `cdk deploy` makes with the CLI's credentials, adds neither.
      expect(template.Parameters?.BootstrapVersion).toBeUndefined()
      expect(template.Rules).toBeUndefined()
    },
  )

  it('are out of reach of the execution policy: no IAM action of it names their role', () => {
    for (const stage of STAGES) {
      const path = releasePath(stage)
      for (const action of ['iam:PutRolePolicy', 'iam:UpdateAssumeRolePolicy', 'iam:DeleteRole']) {
        const decision = path.executionRole.policies.evaluate({
          action,
          resource: path.releaseRole.arn,
        })
        expect(decision.decision, `${stage}: ${action} on ${path.releaseRole.arn}`).not.toBe(
          'allow',
        )
      }
    }
  })
})

describe('the pinned CDK bootstrap template', () => {
  it('takes the execution policies and a boundary for every bootstrap role, as the set-up relies on', () => {
    const template = bootstrapTemplate()
    expect(Object.keys(template.Parameters)).toEqual(
      expect.arrayContaining([
        'CloudFormationExecutionPolicies',
        'InputPermissionsBoundary',
        'ApplyPermissionsBoundaryToAllRoles',
        'Qualifier',
      ]),
    )
    // Version 33: the bootstrap the escalation table evaluates (a CLI upgrade changes it).
    expect(template.Outputs.BootstrapVersion.Value).toBe('33')
    for (const role of [
      'DeploymentActionRole',
      'FilePublishingRole',
      'CloudFormationExecutionRole',
    ]) {
      expect(JSON.stringify(template.Resources[role].Properties.PermissionsBoundary)).toContain(
        'InputPermissionsBoundary',
      )
    }
  })
})
