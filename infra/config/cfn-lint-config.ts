import type { CfnResource } from 'aws-cdk-lib'

/**
 * cfn-lint rules switched off for one resource, each with its reason. The template carries both:
 * cfn-lint reads `Metadata.cfn-lint.config.ignore_checks`, and `petstore:cfnLintReasons` says why,
 * as cdk-nag's acknowledgments do. Every other resource is linted with every rule
 * (test/infra/cfn-lint.test.ts).
 */
export const ignoreCfnLintRules = (
  resource: CfnResource,
  reasons: Readonly<Record<string, string>>,
): void => {
  resource.addMetadata('cfn-lint', { config: { ignore_checks: Object.keys(reasons) } })
  resource.addMetadata('petstore:cfnLintReasons', reasons)
}
