import type { OperationFacts } from '#shared/config/operation-facts-config.ts'
import { type OperationId, ROUTES, type RouteDefinition } from '#shared/config/routes-config.ts'

// Every operation's declaration (`functions/<fn>/<fn>-operation.ts`), found through the route
// table: read by the tests and the bench, never by a function, so nothing of it is bundled.

/** The declaration of one route's operation; a route without one fails, naming the file. */
const declarationOf = async (route: RouteDefinition): Promise<unknown> => {
  const file = `functions/${route.functionName}/${route.functionName}-operation.ts`
  try {
    const module = (await import(`./${route.functionName}/${route.functionName}-operation.ts`)) as {
      operation?: unknown
    }
    if (module.operation) return module.operation
  } catch (error) {
    // Node, vitest and an esbuild bundle each say "not found" in their own words.
    const { code, message } = error as NodeJS.ErrnoException
    const missing =
      code === 'ERR_MODULE_NOT_FOUND' ||
      /Unknown variable dynamic import|Cannot find module|not found in bundle/i.test(message)
    if (!missing) throw error
  }
  throw new Error(
    `${file} does not declare ${route.operationId}: add it, exporting \`operation\` (its sample outcomes, hostile input and bench facts, docs/adding-an-operation.md)`,
  )
}

export type OperationFactsById = { [Id in OperationId]: OperationFacts<Id> }

export const OPERATION_FACTS = Object.fromEntries(
  await Promise.all(ROUTES.map(async (route) => [route.operationId, await declarationOf(route)])),
) as OperationFactsById
