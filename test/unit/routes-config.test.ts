import { readdirSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import {
  API_VERSION_PATH,
  COMMON_ERROR_STATUSES,
  errorStatusesOf,
  grantsWrite,
  indexDeclarationProblems,
  limiterAccessOf,
  type OperationId,
  ROUTES,
  type RouteDefinition,
  routeOf,
  writesOf,
} from '#shared/config/routes-config.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))

describe('routes config', () => {
  it('has no two routes on the same method and path, nor sharing a function', () => {
    expect(new Set(ROUTES.map((route) => `${route.method} ${route.path}`)).size).toBe(ROUTES.length)
    expect(new Set(ROUTES.map((route) => route.functionName)).size).toBe(ROUTES.length)
  })

  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    'has a Lambda entry file on disk for %s',
    (_operationId, route) => {
      const entry = functionEntry(route)
      expect(entry).toBe(`functions/${route.functionName}/${route.functionName}-lambda.ts`)
      expect(readdirSync(`${repoRoot}${dirname(entry)}`)).toContain(basename(entry))
    },
  )

  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    "%s: has a path relative to the stage's /v1 base, with no version segment of its own",
    (operationId, route: RouteDefinition) => {
      const versionSegment = /\/v\d+(?=\/|$)/i
      expect(
        versionSegment.test(route.path),
        `${operationId}'s path ${route.path} has a version segment: route paths are relative to the base path ${API_VERSION_PATH}, which the stage adds (its address is …${API_VERSION_PATH}${route.path}); write path: '${route.path.replace(versionSegment, '')}' in shared/config/routes-config.ts, then \`npm run openapi\``,
      ).toBe(false)
      expect(
        route.path,
        `${operationId}'s path ${route.path}: a path is '/' then segments of letters, digits and . _ ~ -, or a parameter {name}`,
      ).toMatch(/^(\/([A-Za-z0-9._~-]+|\{[A-Za-z][A-Za-z0-9]*\}))+$/)
    },
  )

  it('has the authorizer entry file on disk', () => {
    expect(readdirSync(`${repoRoot}${dirname(AUTHORIZER_ENTRY)}`)).toContain(
      basename(AUTHORIZER_ENTRY),
    )
  })

  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    '%s: every non-GET route is a write, and so is every route whose tables it may change',
    (_operationId, route: RouteDefinition) => {
      if (route.method !== 'GET') {
        expect(
          writesOf(route),
          `${route.method} ${route.path} changes data: remove its \`writes: false\` in shared/config/routes-config.ts (the rate limiter must decide before a write runs)`,
        ).toBe(true)
      }
      if (grantsWrite(route)) {
        expect(
          writesOf(route),
          `${route.operationId} may write (tables ${JSON.stringify(route.tables)}): remove its \`writes: false\` in shared/config/routes-config.ts`,
        ).toBe(true)
      }
      expect(limiterAccessOf(route)).toBe(writesOf(route) ? 'write' : 'read')
    },
  )

  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    '%s: names the indexes its levels query, and only indexes a level lets it query',
    (_operationId, route: RouteDefinition) => {
      expect(indexDeclarationProblems(route)).toEqual([])
    },
  )

  it('says how to fix an index declaration its levels cannot honour', () => {
    const route = { ...ROUTES[0], operationId: 'listCategoryPets' } as RouteDefinition
    expect(indexDeclarationProblems({ ...route, tables: { pets: 'QUERY' }, indexes: {} })).toEqual([
      expect.stringMatching(
        /^listCategoryPets's level QUERY on pets queries indexes, but its route entry names none: add indexes: \{ pets: \[/,
      ),
    ])
    expect(
      indexDeclarationProblems({
        ...route,
        tables: { pets: 'LOOKUP' },
        indexes: { pets: ['status'] },
      }),
    ).toEqual([
      expect.stringMatching(/^listCategoryPets names indexes status of pets, but its level LOOKUP/),
    ])
  })

  it('derives the write flag from the method unless a route states it', () => {
    const route = { ...ROUTES[0], tables: { pets: 'LOOKUP' } } as const
    expect(writesOf({ ...route, method: 'GET' })).toBe(false)
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
      expect(writesOf({ ...route, method })).toBe(true)
    }
    expect(writesOf({ ...route, method: 'POST', writes: false })).toBe(false)
    expect(grantsWrite({ ...route, tables: { pets: 'REMOVE' } })).toBe(true)
    expect(grantsWrite({ ...route, tables: { pets: 'LIST' } })).toBe(false)
  })

  it("answers every route's error statuses: the common ones and its own, once each, ascending", () => {
    for (const route of ROUTES) {
      const statuses = errorStatusesOf(route)
      expect(statuses).toEqual([...new Set(statuses)].sort((a, b) => a - b))
      expect(statuses).toEqual(expect.arrayContaining([...COMMON_ERROR_STATUSES, ...route.errors]))
      expect(statuses).not.toContain(route.successStatus)
    }
  })

  // Deprecation is a decision about a released operation, never a default: an entry copied from a
  // deprecated one (getPet's) must not carry its `deprecation` along. A deprecation's middleware
  // answers 410 from its sunset and points at a successor (deprecation-middleware.ts), so a
  // deprecated route declares 410 and names another, live GET route; no other route declares 410.
  it.each(ROUTES.map((route) => [route.operationId, route] as const))(
    '%s: is deprecated only with a deprecation of its own (410 declared, a live successor, dates in order), and declares 410 only then',
    (operationId, route: RouteDefinition) => {
      const problems: string[] = []
      const declares410 = (route.errors as readonly number[]).includes(410)
      const deprecation = route.deprecation
      if (!deprecation) {
        if (declares410) {
          problems.push(
            `${operationId} declares 410, which only a deprecation answers (after its sunset): take 410 out of its errors in shared/config/routes-config.ts`,
          )
        }
        expect(problems).toEqual([])
        return
      }
      const sameAs = (ROUTES as readonly RouteDefinition[])
        .filter(
          (other) =>
            other !== route && JSON.stringify(other.deprecation) === JSON.stringify(deprecation),
        )
        .map((other) => other.operationId)
      const takeItOut = `a new operation is never deprecated: take the \`deprecation\` out of ${operationId}'s entry in shared/config/routes-config.ts${sameAs.length > 0 ? ` (it is ${sameAs.join(' and ')}'s, word for word: a copy?)` : ''}. Only if ${operationId} really is deprecated`
      if (!declares410) {
        problems.push(
          `${operationId} has a \`deprecation\` (every answer marked deprecated, 410 gone from ${deprecation.sunsetAt}) but does not declare 410: ${takeItOut}, add 410 to its errors`,
        )
      }
      const successor = (ROUTES as readonly RouteDefinition[]).find(
        (other) => other.method === 'GET' && other.path === deprecation.successorPath,
      )
      if (!successor || successor === route || successor.deprecation) {
        problems.push(
          `${operationId}'s deprecation names successorPath ${deprecation.successorPath}, which is not the path of another GET route that is not deprecated: ${takeItOut}, name the route that replaces it`,
        )
      }
      const [deprecatedAt, sunsetAt] = [deprecation.deprecatedAt, deprecation.sunsetAt].map(
        Date.parse,
      )
      if (!(Number(deprecatedAt) < Number(sunsetAt))) {
        problems.push(
          `${operationId}'s deprecation must have deprecatedAt before sunsetAt, both ISO 8601 instants (got ${deprecation.deprecatedAt}, ${deprecation.sunsetAt})`,
        )
      }
      expect(problems).toEqual([])
    },
  )

  it('finds each route by its operation id', () => {
    for (const { operationId } of ROUTES) expect(routeOf(operationId).operationId).toBe(operationId)
    expect(() => routeOf('listOrders' as OperationId)).toThrow(/listOrders/)
  })
})
