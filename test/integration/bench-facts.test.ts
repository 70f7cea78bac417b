import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { APIGatewayProxyResult, Context } from 'aws-lambda'
import { afterAll, describe, expect, it } from 'vitest'
import {
  assertAllCallsAnswered,
  installFakeDynamoHttp,
  uninstallFakeDynamoHttp,
} from '#bench/support/fake-dynamo-http.ts'
import { functionEntry } from '#functions/function-entries.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { ROUTES, type Route } from '#shared/config/routes-config.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'

/**
 * What `npm run bench` measures each operation with, tried here so a gap shows in `npm test`
 * and not only in the bench: the event its folder declares (`bench.event`) gets its route's
 * success status from its Lambda entry, with DynamoDB's HTTP answered in memory by the answers
 * its folder declares (`bench.dynamo`), and every call the function makes has an answer.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const saved = { ...process.env }

afterAll(() => {
  uninstallFakeDynamoHttp()
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
  Object.assign(process.env, saved)
})

type Handler = (event: unknown, context: Context) => Promise<APIGatewayProxyResult>

describe("the bench's facts of each operation", () => {
  it.each(ROUTES.map((route): [string, Route] => [route.operationId, route]))(
    "%s answers the bench's event with its success status, every DynamoDB call answered",
    async (operationId, route) => {
      const { DYNAMODB_ENDPOINT: _local, ...env } = saved
      Object.assign(process.env, {
        ...env,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'bench',
        AWS_SECRET_ACCESS_KEY: 'bench',
        TABLE_NAME: 'bench-pets',
        IDEMPOTENCY_TABLE_NAME: 'bench-idempotency',
        RATE_LIMIT_TABLE_NAME: 'bench-rate-limits',
        CURSOR_SECRET: 'c'.repeat(64),
      })
      delete process.env.DYNAMODB_ENDPOINT
      installFakeDynamoHttp(route.operationId)
      const url = pathToFileURL(join(repoRoot, functionEntry(route)))
      url.searchParams.set('bench-facts', operationId)
      const { handler } = (await import(url.href)) as { handler: Handler }
      const event = restEvent({
        method: route.method,
        resource: route.path,
        ...OPERATION_FIXTURES[route.operationId].bench.event,
      })
      const answer = await handler(event, lambdaContext(operationId))
      assertAllCallsAnswered()
      expect(
        answer.statusCode,
        `${operationId} answered ${answer.statusCode} to the bench's event (bench.event of functions/${route.functionName}/${route.functionName}-fixtures.ts): ${answer.body.slice(0, 300)}`,
      ).toBe(route.successStatus)
    },
  )
})
