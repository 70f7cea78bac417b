import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { petstoreSettings, readCdkJsonSettings } from './config/cdk-json-settings.ts'
import { addReleaseStacks } from './stacks/petstore-release-stack.ts'
import { addPetstoreStacks } from './stacks/petstore-stage-stacks.ts'

// The CDK app: `staging` and `production` stack sets (`-c stage=<name>` for one), and each
// stage's release role when cdk.json names a repository (`petstore.release.githubRepository`).
// Every setting is read from cdk.json; one given with -c that the file does not hold is refused.
const app = new App()
const settings = petstoreSettings(app.node.getAllContext(), readCdkJsonSettings())
const stages = addPetstoreStacks(app, settings)
addReleaseStacks(
  app,
  stages.map((stage) => stage.config),
  settings,
)
// Synthesis fails on any AwsSolutions finding that is not acknowledged with a reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
