import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { authorizerDependencies } from '#functions/authorizer/authorizer-dependencies.ts'
import { keySyncDependencies } from '#functions/key-sync/key-sync-dependencies.ts'
import { ROUTES, type RouteDefinition, tableAccessOf } from '#shared/config/routes-config.ts'

/**
 * Each function's wiring (`functions/<fn>/<fn>-dependencies.ts`) reads its environment once, at
 * the cold start: a variable its stack forgot fails there, naming the variable, never later in a
 * request. Every route's, found through the route table, with the variables its route entry
 * brings (a table's name per table, the cursor secret with `cursors: true`); the authorizer's
 * and the key sync's. (test/infra/functions.test.ts starts every deployed bundle with its
 * stack's environment.)
 */
const AWS = { AWS_REGION: 'eu-west-1' }

/** The variable that carries each table's name (infra/constructs/operation-functions-construct.ts). */
const TABLE_VARIABLES: Record<string, string> = {
  pets: 'TABLE_NAME',
  idempotency: 'IDEMPOTENCY_TABLE_NAME',
  rateLimits: 'RATE_LIMIT_TABLE_NAME',
}

type Build = (env: NodeJS.ProcessEnv) => object
const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const camelCase = (name: string) =>
  name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())

/** A route's `<fn>Dependencies`, from its folder. */
const routeDependencies = async (route: RouteDefinition): Promise<Build> => {
  const file = `functions/${route.functionName}/${route.functionName}-dependencies.ts`
  const module = (await import(pathToFileURL(join(repoRoot, file)).href)) as Record<string, Build>
  const build = module[`${camelCase(route.functionName)}Dependencies`]
  if (!build) throw new Error(`${file} exports no ${camelCase(route.functionName)}Dependencies`)
  return build
}

/** The variables a route's function gets from its stack, by its route entry. */
const routeEnvironment = (route: RouteDefinition): Record<string, string> => ({
  ...AWS,
  ...Object.fromEntries(
    tableAccessOf(route).map(([table]) => [TABLE_VARIABLES[table] as string, `${table}-table`]),
  ),
  ...(route.cursors ? { CURSOR_SECRET: 'c'.repeat(64) } : {}),
})

const functions: [string, Build, Record<string, string>][] = [
  ...(await Promise.all(
    (ROUTES as readonly RouteDefinition[]).map(
      async (route): Promise<[string, Build, Record<string, string>]> => [
        route.operationId,
        await routeDependencies(route),
        routeEnvironment(route),
      ],
    ),
  )),
  [
    'authorizer',
    authorizerDependencies,
    {
      ...AWS,
      KEY_MIRROR_TABLE_NAME: 'key-mirror',
      STORE_KEY_TABLE_NAME: 'store-keys',
      KEY_MAC_SECRETS: `1:${'m'.repeat(64)}`,
      POOL_USAGE_KEY: 'p'.repeat(40),
    },
  ],
  [
    'keySync',
    keySyncDependencies,
    {
      ...AWS,
      KEY_MIRROR_TABLE_NAME: 'key-mirror',
      REST_API_ID: 'a1b2c3d4e5',
      API_STAGE: 'staging',
    },
  ],
]

const requiredVariables = functions.flatMap(([name, build, env]) =>
  Object.keys(env)
    .filter((variable) => !(variable in AWS))
    .map((variable) => [name, variable, build, env] as const),
)

describe('function dependencies', () => {
  it('the authorizer refuses MAC secrets it cannot read, at the cold start', () => {
    const [, build, env] = functions.find(
      ([name]) => name === 'authorizer',
    ) as (typeof functions)[number]
    for (const KEY_MAC_SECRETS of ['1:short', 'one:'.padEnd(40, 'x'), `0:${'m'.repeat(64)}`]) {
      expect(() => build({ ...env, KEY_MAC_SECRETS })).toThrow(/KEY_MAC_SECRETS must be/)
    }
  })

  it.each(functions)('%s builds from the environment its stack gives it', (_name, build, env) => {
    // Act
    const dependencies = build(env)

    // Assess
    expect(dependencies).toEqual(expect.objectContaining({ logger: expect.anything() }))
  })

  it.each(requiredVariables)(
    '%s fails the cold start without %s',
    (_name, variable, build, env) => {
      // Prepare
      const incomplete = { ...env, [variable]: ' ' }

      // Act & Assess
      expect(() => build(incomplete)).toThrow(`Missing required environment variable ${variable}`)
    },
  )
})
