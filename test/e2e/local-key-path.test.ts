import {
  type APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetUsagePlansCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_HEADER } from '#keys/local-control-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import {
  apiClient,
  type InProcessServer,
  managementClient,
  startInProcessServer,
  statusOf,
} from '#test/support/local-server.ts'

/**
 * One key path locally, as on AWS: a change made through API Gateway's management API (here the
 * SDK itself, no CLI waiting on anything) reaches the key mirror through the real key sync, which
 * flushes the authorizer cache; the authorizer reads only the mirror. With production's 300 s
 * cache TTL, only the flush makes a revocation apply at once. No schedule runs in tests: the
 * control plane's own change trigger is what is tested. The test waits for the runs that trigger
 * started (keySyncSettled), never on a deadline, then asks once.
 */
let server: InProcessServer
let client: APIGatewayClient
let proPlanId: string

beforeAll(async () => {
  server = await startInProcessServer(
    { PETSTORE_API_KEYS: '', PETSTORE_AUTHORIZER_CACHE_TTL: '300' },
    // Polling for a 401 is a stream of failed authentications from one address.
    { wrongKeysBeforeDelay: 100_000 },
  )
  client = managementClient(server)
  const { items = [] } = await client.send(new GetUsagePlansCommand({}))
  proPlanId = items.find((plan) => plan.name === 'petstore-local-pro')?.id as string
})
afterAll(async () => {
  client?.destroy()
  await server?.stop()
})

/** The status a key gets once the sync runs the changes so far started have finished. */
const statusOnceSynced = async (key: string): Promise<number> => {
  await server.keySyncSettled()
  return statusOf(server.baseUrl, key)
}

const newProKey = async (name: string) => {
  const key = await client.send(new CreateApiKeyCommand({ name, enabled: true }))
  await client.send(
    new CreateUsagePlanKeyCommand({ usagePlanId: proPlanId, keyId: key.id, keyType: 'API_KEY' }),
  )
  return { id: key.id as string, value: key.value as string }
}

const mirrorItem = async (value: string) => {
  const response = await fetch(
    `${new URL(server.baseUrl).origin}/_local/key-mirror/${hashApiKey(value)}`,
    { headers: { [CONTROL_SECRET_HEADER]: server.controlSecret } },
  )
  return response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined
}

describe('a key changed through the management API', () => {
  it('works once its change is synced, after being created and attached, with its plan from the mirror', async () => {
    const key = await newProKey('created')
    expect(await statusOnceSynced(key.value)).toBe(200)
    const answer = await apiClient(server.baseUrl, key.value).get('/pets?limit=1')
    expect(answer.headers.get('ratelimit-policy')).toBe(
      '"minute";q=300;w=60, "day";q=10000;w=86400',
    )
    expect(await mirrorItem(key.value)).toMatchObject({
      keyId: key.id,
      plan: 'pro',
      perMinute: 300,
      usagePlanId: proPlanId,
    })
  })

  it('is refused once its change is synced, after being disabled, despite a cached Allow', async () => {
    const key = await newProKey('disabled')
    expect(await statusOnceSynced(key.value)).toBe(200)
    await client.send(
      new UpdateApiKeyCommand({
        apiKey: key.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: 'false' }],
      }),
    )
    expect(await statusOnceSynced(key.value)).toBe(401)
    expect(await mirrorItem(key.value)).toBeUndefined()
  })

  it('is refused once its change is synced, after being deleted, despite a cached Allow', async () => {
    const key = await newProKey('deleted')
    expect(await statusOnceSynced(key.value)).toBe(200)
    await client.send(new DeleteApiKeyCommand({ apiKey: key.id }))
    expect(await statusOnceSynced(key.value)).toBe(401)
  })

  it('is refused while on no plan of the stage, however enabled', async () => {
    const key = await client.send(new CreateApiKeyCommand({ name: 'planless', enabled: true }))
    await server.syncKeys()
    expect((await apiClient(server.baseUrl, key.value as string).get('/pets')).status).toBe(401)
  })
})

describe('a second local server in the same process', () => {
  it('has function instances of its own: each server accepts its own keys and only those', async () => {
    const mine = await newProKey('first-server')
    expect(await statusOnceSynced(mine.value)).toBe(200)
    const otherKey = 'second-server-key-0123456789abcdef'
    const other = await startInProcessServer({ PETSTORE_API_KEYS: `free:${otherKey}` })
    try {
      const statuses = async (baseUrl: string) => [
        (await apiClient(baseUrl, mine.value).get('/pets?limit=1')).status,
        (await apiClient(baseUrl, otherKey).get('/pets?limit=1')).status,
      ]
      expect(await statuses(other.baseUrl)).toEqual([401, 200])
      expect(await statuses(server.baseUrl)).toEqual([200, 401])
    } finally {
      await other.stop()
    }
  })
})
