import { Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import type { IConstruct } from 'constructs'
import { describe, expect, it } from 'vitest'
import { synthesizeApp } from './support/synth-app.ts'

interface Acknowledgment {
  path: string
  id: string
  reason: unknown
}

/** Every `Validations.of(x).acknowledge(...)` in the tree, where it was made and why. */
const acknowledgmentsIn = (root: IConstruct): Acknowledgment[] =>
  root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, unknown>).map(([id, reason]) => ({
          path: construct.node.path,
          // aws-cdk-lib records plain ids as annotation rules; cdk-nag strips the same prefix.
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  )

/** Findings of the pack with every acknowledgment ignored: what the rules see. */
const rawFindingsIn = (root: IConstruct) => {
  const pack = new AwsSolutionsChecks()
  // `isAcknowledged` is private to the pack: shadow it on this instance only.
  Object.defineProperty(pack, 'isAcknowledged', { value: () => false })
  return pack.validateScope(root).violations
}

// Every optional resource switched on, so the rules see all of them.
const APPS = {
  defaults: {},
  'every option set': {
    'production.alarmEmail': 'oncall@example.com',
    'production.domainName': 'api.example.com',
    'production.certificateArn': 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
    'production.hostedZoneId': 'Z123456ABCDEFG',
    'production.hostedZoneName': 'example.com',
    'staging.apiGatewayCloudWatchRole': false,
  },
}

describe.each(Object.entries(APPS))('cdk-nag AwsSolutions, %s', (_, context) => {
  // The rules read construct trees, which the shared app.ts assembly has not kept: own syntheses,
  // unbundled (the rules read templates, not code).
  const { app } = synthesizeApp(context)

  it('reports no unacknowledged error or warning in either stage', () => {
    const report = new AwsSolutionsChecks().validateScope(app)
    const findings = report.violations.map(
      (violation) =>
        `${violation.severity} ${violation.ruleName} at ${violation.violatingResources
          .map((resource) => resource.constructPath)
          .join(', ')}`,
    )
    expect(findings).toEqual([])
    expect(report).toMatchObject({ success: true })
  })

  it('names a reason for every acknowledgment', () => {
    const acknowledgments = acknowledgmentsIn(app)
    expect(acknowledgments.length).toBeGreaterThan(0)
    for (const { path, id, reason } of acknowledgments) {
      expect(typeof reason, `${id} at ${path}`).toBe('string')
      expect((reason as string).trim().length, `${id} at ${path}`).toBeGreaterThan(40)
    }
  })

  it('acknowledges only findings the rules actually raise, where they raise them', () => {
    const raw = rawFindingsIn(app)
    expect(raw.length).toBeGreaterThan(0)
    const raised = (id: string, path: string) =>
      raw.some(
        (violation) =>
          violation.ruleName === id &&
          violation.violatingResources.some((resource) =>
            resource.constructPath?.startsWith(`${path}/`),
          ),
      )
    const stale = acknowledgmentsIn(app)
      .filter(({ path, id }) => !raised(id, path))
      .map(({ path, id }) => `${id} at ${path}`)
    expect(stale).toEqual([])
  })

  it('acknowledges this fixed, reviewed list of rules and nothing else', () => {
    expect([...new Set(acknowledgmentsIn(app).map(({ id }) => id))].sort()).toEqual(
      [
        // API design: validation in the functions, API keys instead of Cognito (both stages have
        // the WAF, so AwsSolutions-APIG3 is acknowledged only for a stage that turns it off).
        'AwsSolutions-APIG2',
        'AwsSolutions-COG4',
        // The account-level API Gateway logging role's AWS-managed policy.
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        // X-Ray actions have no resource-level permissions.
        'AwsSolutions-IAM5[Resource::*]',
        // CodeDeploy's service role for Lambda rollouts (production).
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
        // The cursor key: rotation would only break next-page links.
        'AwsSolutions-SMG4',
        // Usage plans created in the console after deployment.
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/usageplans/*/keys]',
        // Keys created in the console after deployment (GetApiKey of a key a plan lists).
        'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/apikeys/*]',
        // Idempotency records expire in 24 hours and the key mirror is rebuilt every minute: no
        // point-in-time recovery for either (the rate-limit table, the usage history, has it).
        'AwsSolutions-DDB3',
      ].sort(),
    )
  })
})
