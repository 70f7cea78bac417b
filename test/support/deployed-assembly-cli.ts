// `node --import tsx test/support/deployed-assembly-cli.ts <outdir>`: an assembly standing in for production as deployed.
import { App } from 'aws-cdk-lib'
import { petstoreSettings, readCdkJsonSettings } from '#infra/config/cdk-json-settings.ts'
import { CONTEXT_ROOT } from '#infra/config/stage-context-reader.ts'
import { addPetstoreStacks } from '#infra/stacks/petstore-stage-stacks.ts'
import { CDK_JSON } from '#test/infra/support/cdk-json.ts'

/**
 * What the release dry run (.ci/release-dry-run.sh) plans production against, with no AWS account:
 * production synthesized from these very sources as a hand deploy left it, with an alarm email
 * given on the command line (`-c production.alarmEmail=…`, which cdk.json does not hold and
 * synthesis now refuses). The release's assembly has no subscription, so the approver's summary
 * must show it removed, first. Bundling is skipped (only the templates are compared), so each
 * function's code shows as changed, as it does in most releases.
 */
const DEPLOYED_ALARM_EMAIL = 'ops@example.com'

const outdir = process.argv[2]
if (!outdir) {
  process.stderr.write('usage: node --import tsx test/support/deployed-assembly-cli.ts <outdir>\n')
  process.exit(2)
}
const file = readCdkJsonSettings()
const settings = {
  ...file,
  production: { ...(file.production as object | undefined), alarmEmail: DEPLOYED_ALARM_EMAIL },
}
const app = new App({
  outdir,
  // Templates only: CDK's CloudFormation rule check runs on the release's own synthesis.
  builtinCloudFormationValidation: false,
  context: {
    ...CDK_JSON.context,
    [CONTEXT_ROOT]: settings,
    'aws:cdk:bundling-stacks': [],
    // What the CDK CLI sets for an app it runs: resource paths and asset metadata, CDK's version.
    'aws:cdk:enable-path-metadata': true,
    'aws:cdk:enable-asset-metadata': true,
    'aws:cdk:version-reporting': true,
    stage: 'production',
  },
})
addPetstoreStacks(app, petstoreSettings(app.node.getAllContext(), settings))
app.synth()
process.stdout.write(
  `${outdir}: production as deployed by hand, alarm email ${DEPLOYED_ALARM_EMAIL}\n`,
)
