import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { APIGatewayProxyResult, Context } from 'aws-lambda'
import { functionEntry } from '#functions/function-entries.ts'
import {
  type LocalIam,
  startLocalIam,
  withFunctionEnvironment,
} from '#local/deployed-iam/local-iam.ts'
import { synthesizedStage } from '#local/deployed-iam/synthesized-stage.ts'
import { localTableDefinitions } from '#local/local-tables.ts'
import type { Route } from '#shared/config/routes-config.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from './dynamo-test-env.ts'

/**
 * Each operation's Lambda entry on the test tables, behind its deployed role as the local server
 * runs it (local/deployed-iam/): a cold start with the variables its synthesized template gives
 * it, and every DynamoDB request authorized against its role's synthesized policies, recorded.
 */
export interface OperationsUnderIam {
  env: DynamoTestEnv
  iam: LocalIam
  /** A fresh instance of the route's entry (a cold start), named `tag` in its module URL. */
  load(route: Route, tag: string): Promise<Handler>
  close(): Promise<void>
}

export type Handler = (event: unknown, context: Context) => Promise<APIGatewayProxyResult>

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))

export const startOperationsUnderIam = async (): Promise<OperationsUnderIam> => {
  const env = await startDynamoTestEnv()
  const tables = {
    pets: env.petTable,
    rateLimits: env.rateLimitTable,
    idempotency: env.idempotencyTable,
    // No operation may touch it: a name no table has.
    keyMirror: `${env.petTable}-key-mirror`,
    storeKeys: `${env.petTable}-store-keys`,
    addressBlocks: `${env.petTable}-address-blocks`,
  }
  const environment: Record<string, string> = {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    DYNAMODB_ENDPOINT: env.endpoint,
    TABLE_NAME: tables.pets,
    RATE_LIMIT_TABLE_NAME: tables.rateLimits,
    IDEMPOTENCY_TABLE_NAME: tables.idempotency,
    KEY_MIRROR_TABLE_NAME: tables.keyMirror,
    CURSOR_SECRET: 'c'.repeat(64),
  }
  const iam = await startLocalIam({
    stage: await synthesizedStage(),
    upstream: env.endpoint,
    environment,
    tables,
    definitions: localTableDefinitions(tables),
    record: true,
  })
  const saved = { ...process.env }
  // What every function's process has, read when a call is made (the SDK's credentials), as the
  // local server sets it for all: the rest each cold start gets from its template.
  Object.assign(process.env, {
    AWS_REGION: environment.AWS_REGION,
    AWS_ACCESS_KEY_ID: environment.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: environment.AWS_SECRET_ACCESS_KEY,
    POWERTOOLS_METRICS_DISABLED: 'true',
  })
  return {
    env,
    iam,
    load: async (route, tag) => {
      const url = pathToFileURL(join(repoRoot, functionEntry(route)))
      url.searchParams.set('under-iam', tag)
      const variables = { ...environment, ...iam.environmentOf(route.operationId) }
      const module = await withFunctionEnvironment(
        route.operationId,
        variables,
        () => import(url.href) as Promise<{ handler: Handler }>,
      )
      return module.handler
    },
    close: async () => {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
      Object.assign(process.env, saved)
      await iam.guard.close()
      await env.close()
    },
  }
}
