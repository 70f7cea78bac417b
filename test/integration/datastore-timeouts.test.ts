import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGetPetHandler } from '#functions/get-pet/get-pet-handler.ts'
import {
  createDocumentClient,
  DYNAMO_CLIENT_LIMITS,
  dynamoConfigFromEnv,
} from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
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
const TEST_LIMITS = {
  connectionTimeoutMs: 200,
  requestTimeoutMs: 300,
  maxAttempts: 2,
  maxBackoffMs: DYNAMO_CLIENT_LIMITS.maxBackoffMs,
} as const
const BOUND_MS =
  TEST_LIMITS.maxAttempts * (TEST_LIMITS.connectionTimeoutMs + TEST_LIMITS.requestTimeoutMs) + 1_000

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

const getPetAgainst = (endpoint: string) => {
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
  return createGetPetHandler({ logger: fakeLogger(), pets, clock: systemClock })
}

describe('a DynamoDB that stops answering', () => {
  it.each([
    ['accepts and never answers', () => stalled.endpoint],
    ['resets every connection', () => resetting.endpoint],
  ])('answers 503 service_unavailable with Retry-After when it %s', async (_, endpointOf) => {
    const handler = getPetAgainst(endpointOf())
    const startedAt = performance.now()
    const response = await handler(
      restEvent({ resource: '/pets/{petId}', pathParameters: { petId: '1' } }),
      lambdaContext('petstore-get-pet'),
    )
    const elapsedMs = performance.now() - startedAt
    expect(response.statusCode).toBe(503)
    expect(response.headers?.['Retry-After']).toMatch(/^\d+$/)
    expect(JSON.parse(response.body)).toMatchObject({ code: 'service_unavailable', status: 503 })
    expect(elapsedMs).toBeLessThan(BOUND_MS)
  })
})
