import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import {
  createDocumentClient,
  type DynamoClientLimits,
  dynamoConfigFromEnv,
  worstCaseCallMs,
} from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { rateLimitMiddleware } from '#shared/rate-limit/rate-limit-middleware.ts'
import { DynamoRateLimiter } from '#shared/rate-limit/rate-limiter.ts'
import { systemClock } from '#shared/time/clock.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/**
 * DynamoDB that stops answering: a TCP server on loopback that accepts connections and then
 * never answers (a stall), or resets them (a dropped connection). The real getPet handler with a
 * real repository and SDK client must answer 503 service_unavailable with Retry-After within the
 * client's time limits, never hang into the Lambda timeout or answer 500. The limits are scaled
 * down here so the test runs in about a second; the production ones are checked in unit tests.
 */
const TEST_LIMITS: DynamoClientLimits = {
  connectionTimeoutMs: 200,
  requestTimeoutMs: 300,
  maxAttempts: 2,
  maxBackoffMs: 1_000,
}
/** The same arithmetic as production (1.6 s here, 3 s there), plus slack for a loaded machine. */
const BOUND_MS = worstCaseCallMs(TEST_LIMITS) + 250
/** A stall lets every attempt run into the request timeout: the retry really happened. */
const STALL_MS = TEST_LIMITS.maxAttempts * TEST_LIMITS.requestTimeoutMs * 0.95

const sockets = new Set<Socket>()
const listen = (onConnection: (socket: Socket) => void) =>
  new Promise<{ server: Server; endpoint: string }>((resolve) => {
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => undefined)
      onConnection(socket)
    })
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as { port: number }
      resolve({ server, endpoint: `http://127.0.0.1:${address.port}` })
    })
  })

let stalled: { server: Server; endpoint: string }
let resetting: { server: Server; endpoint: string }
beforeAll(async () => {
  stalled = await listen(() => undefined)
  resetting = await listen((socket) => socket.once('data', () => socket.resetAndDestroy()))
})
afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await Promise.all(
    [stalled, resetting].map(
      ({ server }) => new Promise((resolve) => server.close(() => resolve(undefined))),
    ),
  )
})

/**
 * The real getPet handler on a client pointed at the endpoint; with `limited`, also behind the
 * real rate limiter on the same (stalled) DynamoDB, as in production.
 */
const getPetAgainst = (endpoint: string, limited: boolean) => {
  const client = createDocumentClient({
    ...dynamoConfigFromEnv({ DYNAMODB_ENDPOINT: endpoint }, TEST_LIMITS),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const tableName = 'petstore-stalled'
  const pets = new PetRepository({
    client,
    tableName,
    ids: new BlockIdAllocator({ client, tableName, blockSize: 50 }),
  })
  const logger = fakeLogger()
  const rateLimit = limited
    ? rateLimitMiddleware({
        limiter: new DynamoRateLimiter({ client, tableName: 'rate-limits-stalled' }),
        access: 'read',
        logger,
      })
    : undefined
  return {
    client,
    handler: getPetHandler({ logger, pets, clock: systemClock, rateLimit }),
  }
}

describe('a DynamoDB that stops answering', () => {
  it.each([
    ['accepts and never answers', () => stalled.endpoint, false, STALL_MS],
    ['resets every connection', () => resetting.endpoint, false, 0],
    ['never answers the limiter either', () => stalled.endpoint, true, STALL_MS],
  ])(
    'answers 503 service_unavailable with Retry-After when it %s',
    async (_, endpointOf, limited, minMs) => {
      const { client, handler } = getPetAgainst(endpointOf(), limited)
      const startedAt = performance.now()
      const response = await handler(
        restEvent({ resource: '/pets/{petId}', pathParameters: { petId: '1' } }),
        lambdaContext('petstore-get-pet'),
      )
      const elapsedMs = performance.now() - startedAt
      client.destroy()
      expect(response.statusCode).toBe(503)
      expect(response.headers?.['Retry-After']).toMatch(/^\d+$/)
      expect(JSON.parse(response.body)).toMatchObject({ code: 'service_unavailable', status: 503 })
      // Measured about 0.62-0.65 s for a stall (both attempts time out), about 20 ms for resets.
      expect(elapsedMs).toBeGreaterThanOrEqual(minMs)
      expect(elapsedMs).toBeLessThan(BOUND_MS)
    },
  )
})
