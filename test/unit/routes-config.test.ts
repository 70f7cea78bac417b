import { readdirSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import { type OperationId, ROUTES, routeOf } from '#shared/config/routes-config.ts'

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))

describe('routes config', () => {
  it('has exactly the operations of docs/api.md, with their methods and paths', () => {
    const operations = ROUTES.map(({ operationId, method, path }) => ({
      operationId,
      method,
      path,
    }))
    expect(operations).toHaveLength(3)
    expect(operations).toEqual(
      expect.arrayContaining([
        { operationId: 'listPets', method: 'GET', path: '/pets' },
        { operationId: 'createPet', method: 'POST', path: '/pets' },
        { operationId: 'getPet', method: 'GET', path: '/pets/{petId}' },
      ]),
    )
  })

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

  it('has the authorizer entry file on disk', () => {
    expect(readdirSync(`${repoRoot}${dirname(AUTHORIZER_ENTRY)}`)).toContain(
      basename(AUTHORIZER_ENTRY),
    )
  })

  it('lets only createPet write', () => {
    expect(ROUTES.filter((route) => route.access === 'write').map((r) => r.operationId)).toEqual([
      'createPet',
    ])
  })

  it('marks only getPet as deprecated', () => {
    const deprecated = ROUTES.filter((route) => 'deprecation' in route).map((r) => r.operationId)
    expect(deprecated).toEqual(['getPet'])
  })

  it('finds each route by its operation id', () => {
    for (const id of ['listPets', 'createPet', 'getPet'] as const) {
      expect(routeOf(id).operationId).toBe(id)
    }
    expect(() => routeOf('listOrders' as OperationId)).toThrow(/listOrders/)
  })
})
