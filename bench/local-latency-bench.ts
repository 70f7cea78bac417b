/**
 * What the rate limiter adds to a request on the local server: the same handlers (built by the
 * same factories as the Lambda entries) behind the local gateway over HTTP, once with the
 * limiter and once without, on one embedded DynamoDB. Sequential requests, median and p99.
 * Run: npx tsx bench/local-latency-bench.ts [requests per case]
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import { createPetDependencies } from '#functions/create-pet/create-pet-dependencies.ts'
import { createPetHandler } from '#functions/create-pet/create-pet-handler.ts'
import { getPetDependencies } from '#functions/get-pet/get-pet-dependencies.ts'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import { listPetsDependencies } from '#functions/list-pets/list-pets-dependencies.ts'
import { listPetsHandler } from '#functions/list-pets/list-pets-handler.ts'
import { ensureTable, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { createLocalGateway, type ProxyHandler } from '#local/gateway/local-gateway.ts'
import type { KeyStore } from '#shared/auth/key-store.ts'
import { type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import {
  idempotencyTableDefinition,
  petTableDefinition,
  rateLimitTableDefinition,
} from '#shared/data/table-keys.ts'
import { logger } from '#shared/observability/logger.ts'
import { percentile } from './bench-stats.ts'

const requests = Number(process.argv[2] ?? 1_000)
const KEY = 'bench-enterprise-0123456789abcdef'

Object.assign(process.env, {
  POWERTOOLS_TRACE_ENABLED: 'false',
  POWERTOOLS_METRICS_DISABLED: 'true',
  POWERTOOLS_LOG_LEVEL: 'ERROR',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
})
const dynamo = await startEmbeddedDynamo(IN_MEMORY)
const env = {
  ...process.env,
  TABLE_NAME: 'bench-pets',
  RATE_LIMIT_TABLE_NAME: 'bench-limits',
  IDEMPOTENCY_TABLE_NAME: 'bench-idempotency',
  CURSOR_SECRET: 'bench-cursor-secret',
  DYNAMODB_ENDPOINT: dynamo.endpoint,
}
const admin = new DynamoDBClient({ endpoint: dynamo.endpoint })
await ensureTable(admin, petTableDefinition('bench-pets'))
await ensureTable(admin, rateLimitTableDefinition('bench-limits'))
await ensureTable(admin, idempotencyTableDefinition('bench-idempotency'))

const serve = async (withLimiter: boolean) => {
  const withoutLimiter = <T extends { rateLimit?: unknown }>(all: T): T => {
    if (!withLimiter) delete all.rateLimit
    return all
  }
  const measured: Partial<Record<OperationId, ProxyHandler>> = {
    listPets: listPetsHandler(withoutLimiter(listPetsDependencies(env))) as unknown as ProxyHandler,
    createPet: createPetHandler(
      withoutLimiter(createPetDependencies(env)),
    ) as unknown as ProxyHandler,
    getPet: getPetHandler(withoutLimiter(getPetDependencies(env))) as unknown as ProxyHandler,
  }
  // The operations this bench does not time are routed to an answer that says so.
  const notTimed: ProxyHandler = async () => ({ statusCode: 501, body: '{}' })
  const handlers = Object.fromEntries(
    ROUTES.map((route) => [route.operationId, measured[route.operationId] ?? notTimed]),
  ) as Record<OperationId, ProxyHandler>
  // One key with limits the benchmark never reaches: every request takes the admitted path.
  const keyStore: KeyStore = {
    lookup: async (key) =>
      key === KEY
        ? {
            keyId: 'bench',
            plan: 'enterprise',
            limits: { perMinute: 1_000_000, perDay: 10_000_000 },
          }
        : undefined,
  }
  const server = createServer(
    createLocalGateway({ handlers, authorizer: authorizerHandler({ keyStore, logger }) }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }
}

const time = async (label: string, call: () => Promise<Response>) => {
  for (let i = 0; i < 50; i += 1) await (await call()).arrayBuffer()
  const samples: number[] = []
  for (let i = 0; i < requests; i += 1) {
    const start = process.hrtime.bigint()
    const response = await call()
    await response.arrayBuffer()
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (response.status >= 300) throw new Error(`${label}: HTTP ${response.status}`)
  }
  samples.sort((a, b) => a - b)
  return { label, median: percentile(samples, 50), p99: percentile(samples, 99) }
}

const headers = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }
const results: { label: string; median: number; p99: number }[] = []
for (const withLimiter of [false, true, false, true]) {
  const { server, base } = await serve(withLimiter)
  await fetch(`${base}/pets`, { method: 'POST', headers, body: '{"name":"First","categoryId":1}' })
  const tag = withLimiter ? 'with limiter' : 'no limiter  '
  results.push(await time(`GET /pets/1      ${tag}`, () => fetch(`${base}/pets/1`, { headers })))
  results.push(
    await time(`GET /pets?limit=20 ${tag}`, () => fetch(`${base}/pets?limit=20`, { headers })),
  )
  results.push(
    await time(`POST /pets       ${tag}`, () =>
      fetch(`${base}/pets`, { method: 'POST', headers, body: '{"name":"Bench","categoryId":1}' }),
    ),
  )
  await new Promise((resolve) => server.close(resolve))
}
console.log(`sequential requests per case: ${requests} (after 50 warm-up), two rounds each`)
for (const { label, median, p99 } of results) {
  console.log(`${label}  median ${median.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms`)
}
admin.destroy()
await dynamo.close()
process.exit(0)
