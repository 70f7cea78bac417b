import { type IResource, LambdaIntegration, type RestApi } from 'aws-cdk-lib/aws-apigateway'
import { API_VERSION_PATH, type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import type { PetstoreFunction } from './petstore-function-construct.ts'

/** The resource for `/v1/pets/{petId}`, creating each missing segment once. */
const resourceAt = (root: IResource, path: string): IResource =>
  path
    .split('/')
    .filter((segment) => segment !== '')
    .reduce<IResource>(
      (parent, segment) => parent.getResource(segment) ?? parent.addResource(segment),
      root,
    )

/** Every route of the shared route table under `/v1`, each integrated with its own function. */
export const addRouteMethods = (
  api: RestApi,
  functions: Record<OperationId, PetstoreFunction>,
): void => {
  for (const route of ROUTES) {
    resourceAt(api.root, `${API_VERSION_PATH}${route.path}`).addMethod(
      route.method,
      // Test invocations from the console would need a second, unscoped invoke permission.
      new LambdaIntegration(functions[route.operationId].invokeTarget, { allowTestInvoke: false }),
      { operationName: route.operationId },
    )
  }
}
