import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { addReleaseStacks } from './stacks/petstore-release-stack.ts'
import { addPetstoreStacks } from './stacks/petstore-stage-stacks.ts'

// The CDK app: `staging` and `production` stack sets from context (`-c stage=<name>` for one),
// and each stage's release role when `-c release.githubRepository=owner/name` is set.
const app = new App()
const stages = addPetstoreStacks(app)
addReleaseStacks(
  app,
  stages.map((stage) => stage.config),
)
// Synthesis fails on any AwsSolutions finding that is not acknowledged with a reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
