import {
  AuthorizationType,
  type IResource,
  LambdaIntegration,
  MockIntegration,
  PassthroughBehavior,
  type RestApi,
} from 'aws-cdk-lib/aws-apigateway'
import { API_VERSION_PATH, type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { preflightHeaders } from '#shared/http/cors-headers.ts'
import type { PetstoreFunction } from './petstore-function-construct.ts'

// The REST API's methods: one per route of the route table, and each resource's preflight.

/** The resource for `/v1/pets/{petId}`, creating each missing segment once. */
const resourceAt = (root: IResource, path: string): IResource =>
  path
    .split('/')
    .filter((segment) => segment !== '')
    .reduce<IResource>(
      (parent, segment) => parent.getResource(segment) ?? parent.addResource(segment),
      root,
    )

/**
 * A resource's CORS preflight: OPTIONS answered 204 by a mock integration, with neither the
 * authorizer nor a key (a browser sends no Authorization on a preflight). The local gateway
 * answers the same (local/gateway/local-gateway.ts).
 */
const addPreflight = (resource: IResource, methods: string[], corsAllowOrigin: string): void => {
  const headers = preflightHeaders(corsAllowOrigin, methods)
  const parameter = (name: string) => `method.response.header.${name}`
  resource.addMethod(
    'OPTIONS',
    new MockIntegration({
      requestTemplates: { 'application/json': '{"statusCode": 204}' },
      passthroughBehavior: PassthroughBehavior.NEVER,
      integrationResponses: [
        {
          statusCode: '204',
          responseParameters: Object.fromEntries(
            Object.entries(headers).map(([name, value]) => [parameter(name), `'${value}'`]),
          ),
        },
      ],
    }),
    {
      authorizationType: AuthorizationType.NONE,
      apiKeyRequired: false,
      methodResponses: [
        {
          statusCode: '204',
          responseParameters: Object.fromEntries(
            Object.keys(headers).map((name) => [parameter(name), true]),
          ),
        },
      ],
    },
  )
}

/**
 * Every route of the shared route table under `/v1`, each integrated with its own function, and
 * each of their resources' CORS preflight.
 */
export const addRouteMethods = (
  api: RestApi,
  functions: Record<OperationId, PetstoreFunction>,
  corsAllowOrigin: string,
): void => {
  const methodsOf = new Map<IResource, string[]>()
  for (const route of ROUTES) {
    const resource = resourceAt(api.root, `${API_VERSION_PATH}${route.path}`)
    resource.addMethod(
      route.method,
      // Test invocations from the console would need a second, unscoped invoke permission.
      new LambdaIntegration(functions[route.operationId].invokeTarget, { allowTestInvoke: false }),
      { operationName: route.operationId },
    )
    methodsOf.set(resource, [...(methodsOf.get(resource) ?? []), route.method])
  }
  for (const [resource, methods] of methodsOf) addPreflight(resource, methods, corsAllowOrigin)
}
