import type { OperationFixtures } from '#functions/operation-fixture-types.ts'
import { type OperationId, ROUTES, type RouteDefinition } from '#shared/config/routes-config.ts'

// Every operation's fixtures (`functions/<fn>/<fn>-fixtures.ts`), found through the route table:
// read by the tests and the bench, never by a function, so nothing of them is bundled.

/** The fixtures of one route's operation; a route without them fails, naming the file. */
const fixturesOf = async (route: RouteDefinition): Promise<unknown> => {
  const file = `functions/${route.functionName}/${route.functionName}-fixtures.ts`
  try {
    const module = (await import(`./${route.functionName}/${route.functionName}-fixtures.ts`)) as {
      fixtures?: unknown
    }
    if (module.fixtures) return module.fixtures
  } catch (error) {
    // Node, vitest and an esbuild bundle each say "not found" in their own words.
    const { code, message } = error as NodeJS.ErrnoException
    const missing =
      code === 'ERR_MODULE_NOT_FOUND' ||
      /Unknown variable dynamic import|Cannot find module|not found in bundle/i.test(message)
    if (!missing) throw error
  }
  throw new Error(
    `${file} does not hold ${route.operationId}'s fixtures: add it, exporting \`fixtures\` (its sample outcomes, hostile input and bench figures, docs/adding-an-operation.md)`,
  )
}

export type OperationFixturesById = { [Id in OperationId]: OperationFixtures<Id> }

export const OPERATION_FIXTURES = Object.fromEntries(
  await Promise.all(ROUTES.map(async (route) => [route.operationId, await fixturesOf(route)])),
) as OperationFixturesById
