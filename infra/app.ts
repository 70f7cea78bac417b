import { App, Validations } from 'aws-cdk-lib'
import { AwsSolutionsChecks } from 'cdk-nag'
import { addPetstoreStacks } from './stacks/petstore-stage-stacks.ts'

// The CDK app: `staging` and `production` stack sets from context (`-c stage=<name>` for one).
const app = new App()
addPetstoreStacks(app)
// Synthesis fails on any AwsSolutions finding that is not acknowledged with a reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
