import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { appStage, type CfnResource } from './support/synth-app.ts'

/**
 * docs/deploying.md names the services a narrowed bootstrap policy
 * (`--cloudformation-execution-policies`) must cover. A policy built from that list has to create
 * every resource the templates hold, or the first deploy fails: EventBridge was once missing.
 */
const deploying = readFileSync(new URL('../../docs/deploying.md', import.meta.url), 'utf8')

/** What the doc calls the service that creates each resource type (the most specific entry wins). */
const SERVICE_NAMES: [typePrefix: string, name: string][] = [
  ['AWS::ApiGateway::', 'API Gateway'],
  ['AWS::Lambda::', 'Lambda'],
  ['AWS::DynamoDB::', 'DynamoDB'],
  ['AWS::IAM::', 'IAM'],
  ['AWS::Logs::', 'CloudWatch Logs'],
  ['AWS::CloudWatch::InsightRule', 'Contributor Insights'],
  ['AWS::CloudWatch::', 'alarms and dashboards'],
  ['AWS::SNS::', 'SNS'],
  ['AWS::CodeDeploy::', 'CodeDeploy'],
  ['AWS::WAFv2::', 'WAFv2'],
  ['AWS::SecretsManager::', 'Secrets Manager'],
  ['AWS::Events::', 'EventBridge'],
  ['AWS::Route53::', 'Route 53'],
  ['AWS::CertificateManager::', 'ACM'],
  // A custom resource is a Lambda function CloudFormation invokes.
  ['Custom::', 'Lambda'],
]

const serviceOf = (type: string): string | undefined =>
  SERVICE_NAMES.filter(([prefix]) => type.startsWith(prefix)).sort(
    ([a], [b]) => b.length - a.length,
  )[0]?.[1]

/** The parenthesis after "a narrower policy covering what these stacks create". */
const listedServices = (): string => {
  const match = /narrower policy covering\s+what these stacks create \(([^)]*)\)/.exec(deploying)
  expect(
    match,
    'docs/deploying.md lists the services of a narrowed bootstrap policy',
  ).not.toBeNull()
  return (match?.[1] ?? '').replace(/\s+/g, ' ')
}

describe('the narrowed bootstrap policy of docs/deploying.md', () => {
  it('names the service of every resource type either stage creates', () => {
    const listed = listedServices()
    const types = new Set<string>()
    for (const stage of ['staging', 'production'] as const) {
      for (const template of Object.values(appStage(stage))) {
        const resources = template.toJSON().Resources as Record<string, CfnResource>
        for (const resource of Object.values(resources)) types.add(resource.Type)
      }
    }
    expect(types.size).toBeGreaterThan(10)
    const missing = [...types]
      .map((type) => ({ type, service: serviceOf(type) }))
      .filter(({ service }) => service === undefined || !listed.includes(service))
    expect(missing).toEqual([])
  })
})
