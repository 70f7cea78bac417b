import { App, Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda'
import { describe, expect, it } from 'vitest'
import { applyStageRoles } from '#infra/constructs/stage-roles-aspect.ts'

/** The aspect reaches every role under its scope, those CDK makes for a construct included. */
describe('applyStageRoles', () => {
  it('puts every role of the stack on the stage path, with the stage boundary', () => {
    const stack = new Stack(
      new App({ builtinCloudFormationValidation: false }),
      'petstore-staging-api',
      {
        env: { account: '111111111111', region: 'eu-west-1' },
      },
    )
    new Role(stack, 'Own', { assumedBy: new ServicePrincipal('apigateway.amazonaws.com') })
    // A construct that makes its role itself.
    new LambdaFunction(stack, 'Fn', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => {}'),
    })
    applyStageRoles(stack, 'staging')
    const roles = Object.values(Template.fromStack(stack).findResources('AWS::IAM::Role'))
    expect(roles).toHaveLength(2)
    for (const role of roles) {
      expect(role.Properties).toMatchObject({
        Path: '/petstore-staging/',
        PermissionsBoundary: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':iam::111111111111:policy/petstore-staging-role-boundary',
            ],
          ],
        },
      })
    }
  })
})
