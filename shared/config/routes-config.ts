/**
 * The route table: the local gateway and the CDK REST API are both built from it.
 * Paths are relative to the `/v1` base path; `{name}` marks a path parameter.
 */
export const API_VERSION_PATH = '/v1'

export const ROUTES = [
  {
    operationId: 'listPets',
    method: 'GET',
    path: '/pets',
    functionName: 'list-pets',
    access: 'read',
  },
  {
    operationId: 'createPet',
    method: 'POST',
    path: '/pets',
    functionName: 'create-pet',
    access: 'write',
  },
  {
    operationId: 'getPet',
    method: 'GET',
    path: '/pets/{petId}',
    functionName: 'get-pet',
    access: 'read',
    // RFC 9745 / RFC 8594: deprecated since this API's launch, removed on 5 December 2030.
    deprecation: {
      deprecatedAt: '2026-11-22T00:00:00Z',
      sunsetAt: '2030-12-05T00:00:00Z',
      successorPath: '/pets',
    },
  },
] as const satisfies readonly RouteDefinition[]

export interface RouteDefinition {
  operationId: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  /** Folder under functions/ holding `<name>-lambda.ts`. */
  functionName: string
  /** What the operation needs from the pet table. */
  access: 'read' | 'write'
  deprecation?: RouteDeprecation
}

export interface RouteDeprecation {
  deprecatedAt: string
  sunsetAt: string
  /** Path of the replacement, relative to the base address. */
  successorPath: string
}

export type Route = (typeof ROUTES)[number]
export type OperationId = Route['operationId']

export const routeOf = <Id extends OperationId>(
  operationId: Id,
): Extract<Route, { operationId: Id }> => {
  const route = ROUTES.find((candidate) => candidate.operationId === operationId)
  if (!route) throw new Error(`Unknown operation ${operationId}`)
  return route as Extract<Route, { operationId: Id }>
}
