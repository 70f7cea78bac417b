import { API_VERSION_PATH, ROUTES, type Route } from '#shared/config/routes-config.ts'

/* Routing from the shared route table, before authentication, as API Gateway routes. */

interface CompiledRoute {
  route: Route
  resource: string
  pattern: RegExp
  parameterNames: string[]
}

const compile = (route: Route): CompiledRoute => {
  const resource = `${API_VERSION_PATH}${route.path}`
  const parameterNames: string[] = []
  const source = resource
    .split('/')
    .map((segment) => {
      const parameter = /^\{(\w+)\}$/.exec(segment)
      if (!parameter?.[1]) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      parameterNames.push(parameter[1])
      return '([^/]+)'
    })
    .join('/')
  return { route, resource, pattern: new RegExp(`^${source}$`), parameterNames }
}

const COMPILED = ROUTES.map(compile)

/** Malformed percent-encoding reaches the function as written (and fails its validation: 400). */
const safeDecode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** A route of the table, matched by method and path, with its path parameters decoded. */
export interface RouteMatch {
  route: Route
  /** The resource as API Gateway names it, e.g. `/v1/pets/{petId}`. */
  resource: string
  pathParameters: Record<string, string> | null
}

/**
 * Step 1, routing: the route of this method and path, or undefined for API Gateway's
 * MISSING_AUTHENTICATION_TOKEN (answered before authentication).
 */
export const matchRoute = (method: string, pathname: string): RouteMatch | undefined => {
  let match: { compiled: CompiledRoute; values: string[] } | undefined
  for (const compiled of COMPILED) {
    const found = compiled.pattern.exec(pathname)
    if (found && compiled.route.method === method) match = { compiled, values: found.slice(1) }
  }
  if (!match) return undefined
  const { route, resource, parameterNames } = match.compiled
  const values = match.values
  const pathParameters =
    parameterNames.length === 0
      ? null
      : Object.fromEntries(
          parameterNames.map((name, index) => [name, safeDecode(values[index] ?? '')]),
        )
  return { route, resource, pathParameters }
}

/**
 * The methods of the resource at `pathname`: what its preflight allows (the CDK stack adds an
 * OPTIONS method with a mock integration to each resource; it needs no key).
 */
export const resourceMethods = (pathname: string): string[] =>
  COMPILED.filter(({ pattern }) => pattern.test(pathname)).map(({ route }) => route.method)
