import {
  type APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetUsagePlansCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { ListTablesCommand } from '@aws-sdk/client-dynamodb'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type EmbeddedDynamo, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { LOCAL_TABLES } from '#local/local-environment.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { heldTimers } from '#test/support/held-timers.ts'
import { type LaggingReadProxy, startLaggingReadProxy } from '#test/support/lagging-read-proxy.ts'
import {
  apiClient,
  type InProcessServer,
  managementClient,
  startInProcessServer,
} from '#test/support/local-server.ts'

/**
 * Revocation under DynamoDB's read consistency. The local server's DynamoDB is a proxy that, like
 * AWS, may answer an eventually consistent GetItem with the item as it was up to a second ago
 * (dynalite alone is always current). The key sync deletes a revoked key's mirror item and then
 * flushes the authorizer cache; a key that keeps sending meets the authorizer right after the
 * flush. Had the authorizer read the old item, its allow would be cached again for the production
 * TTL (300 s). One clock drives the gateway (its cache) and the lag, so the test decides when a
 * write has propagated; nothing waits.
 */
const LAG_MS = 1_000
const TTL_SECONDS = 300

let now = Date.UTC(2026, 10, 26, 12, 0, 0)
const clock = () => now

let dynamo: EmbeddedDynamo
let proxy: LaggingReadProxy
let server: InProcessServer
let client: APIGatewayClient
let documentClient: ReturnType<typeof createDocumentClient>
let proPlanId: string
let mirrorTable: string

beforeAll(async () => {
  dynamo = await startEmbeddedDynamo(IN_MEMORY)
  proxy = await startLaggingReadProxy(dynamo.endpoint, { lagMs: LAG_MS, clock })
  server = await startInProcessServer(
    {
      DYNAMODB_ENDPOINT: proxy.endpoint,
      PETSTORE_API_KEYS: '',
      PETSTORE_AUTHORIZER_CACHE_TTL: String(TTL_SECONDS),
    },
    // Sending with a revoked key is a stream of failed authentications from one address. The
    // test moves the clock, so it starts every sync run itself.
    { clock, timers: heldTimers(), wrongKeysBeforeDelay: 100_000 },
  )
  client = managementClient(server)
  const { items = [] } = await client.send(new GetUsagePlansCommand({}))
  proPlanId = items.find((plan) => plan.name === 'petstore-local-pro')?.id as string
  documentClient = createDocumentClient({
    endpoint: proxy.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  const { TableNames = [] } = await documentClient.send(new ListTablesCommand({}))
  mirrorTable = TableNames.find((name) => name.startsWith(LOCAL_TABLES.keyMirror)) as string
})
afterAll(async () => {
  client?.destroy()
  documentClient?.destroy()
  await server?.stop()
  await proxy?.close()
  await dynamo?.close()
})

/** A pro key that works and whose allow is in the authorizer cache. */
const workingKey = async (name: string) => {
  const key = await client.send(new CreateApiKeyCommand({ name, enabled: true }))
  await client.send(
    new CreateUsagePlanKeyCommand({ usagePlanId: proPlanId, keyId: key.id, keyType: 'API_KEY' }),
  )
  await server.syncKeys()
  now += LAG_MS // the new item has reached every reader
  const value = key.value as string
  expect((await apiClient(server.baseUrl, value).get('/pets?limit=1')).status).toBe(200)
  return { id: key.id as string, value }
}

/** The mirror item as an eventually and a strongly consistent read see it now. */
const mirrorReads = async (value: string) => {
  const read = async (consistent: boolean) =>
    (
      await documentClient.send(
        new GetCommand({
          TableName: mirrorTable,
          Key: { keyHash: hashApiKey(value) },
          ConsistentRead: consistent,
        }),
      )
    ).Item?.keyId
  return { eventually: await read(false), strongly: await read(true) }
}

/**
 * Keeps sending with the key from the moment the change is in force (the sync deleted its item
 * and flushed the cache) until past the lag and a whole cache TTL: every status it saw.
 */
const statusesWhileSending = async (value: string) => {
  const api = apiClient(server.baseUrl, value)
  const statuses: number[] = []
  const steps = [0, 0, LAG_MS / 4, LAG_MS / 4, LAG_MS / 2, TTL_SECONDS * 1_000 - 1, 2]
  for (const step of steps) {
    now += step
    statuses.push((await api.get('/pets?limit=1')).status)
  }
  return statuses
}

describe('a revoked key that keeps sending', () => {
  it('is refused from the first request after the sync deleted its item and flushed the cache, and never allowed again', async () => {
    const key = await workingKey('revoked-while-sending')
    await client.send(new DeleteApiKeyCommand({ apiKey: key.id }))
    // Whichever run took the change (the control plane triggers one too) deleted and flushed.
    await server.syncKeys()
    // The window: an eventually consistent read still returns the deleted item.
    expect(await mirrorReads(key.value)).toEqual({ eventually: key.id, strongly: undefined })

    expect(await statusesWhileSending(key.value)).toEqual([401, 401, 401, 401, 401, 401, 401])
  })

  it('is refused from the first request after being disabled, and never allowed again', async () => {
    const key = await workingKey('disabled-while-sending')
    await client.send(
      new UpdateApiKeyCommand({
        apiKey: key.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: 'false' }],
      }),
    )
    await server.syncKeys()
    expect(await mirrorReads(key.value)).toEqual({ eventually: key.id, strongly: undefined })

    expect(await statusesWhileSending(key.value)).toEqual([401, 401, 401, 401, 401, 401, 401])
  })
})
