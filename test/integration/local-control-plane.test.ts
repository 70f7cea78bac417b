import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  FlushStageAuthorizersCacheCommand,
  GetApiKeyCommand,
  GetTagsCommand,
  GetUsageCommand,
  GetUsagePlanKeysCommand,
  GetUsagePlansCommand,
  NotFoundException,
  paginateGetApiKeys,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { controlSecretCredentials } from '#keys/local-control-config.ts'
import {
  createControlPlaneHandler,
  MANAGEMENT_API_PATH,
} from '#local/control-plane/control-plane-handler.ts'
import { ControlPlaneStore, LOCAL_API_STAGE } from '#local/control-plane/control-plane-store.ts'
import { PLAN_TAGS } from '#shared/config/plans-config.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'

/**
 * The local control plane as the AWS SDK sees it: a real APIGatewayClient pointed at it (dummy
 * credentials, any Region) sends exactly what it sends to AWS and parses the answers, paginators
 * and typed exceptions included; the real key source reads it as the key sync does.
 */
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0)
const TODAY = '2026-11-22'
const SECRET = 'local-control-plane-test-secret-0123456789'
let server: Server
let store: ControlPlaneStore
let client: APIGatewayClient
const flushes: string[] = []
const used = new Map<string, number>()

beforeAll(async () => {
  store = await ControlPlaneStore.open(':memory:', { clock: () => NOW })
  const handler = createControlPlaneHandler({
    store,
    flushAuthorizerCache: () => flushes.push('flushed'),
    usedToday: (value) => used.get(value) ?? 0,
    runKeySync: () => Promise.reject(new Error('not in this test')),
    mirrorItem: async () => undefined,
    outputs: () => ({}),
    clock: () => NOW,
    secret: SECRET,
  })
  server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  client = new APIGatewayClient({
    endpoint: `http://127.0.0.1:${port}${MANAGEMENT_API_PATH}`,
    region: 'eu-central-1',
    credentials: controlSecretCredentials(SECRET),
  })
})
afterAll(async () => {
  client?.destroy()
  await new Promise((resolve) => server?.close(resolve))
})

const createPlan = (name: string, tags: Record<string, string>) =>
  client.send(
    new CreateUsagePlanCommand({
      name,
      apiStages: [{ apiId: LOCAL_API_STAGE.apiId, stage: LOCAL_API_STAGE.stage }],
      throttle: { rateLimit: 2, burstLimit: 120 },
      quota: { limit: 3000, period: 'DAY' },
      tags,
    }),
  )

describe('the local control plane, through the AWS SDK', () => {
  it('creates, reads, pages, updates and deletes API keys', async () => {
    const created = await client.send(
      new CreateApiKeyCommand({ name: 'alice', enabled: true, tags: { team: 'a' } }),
    )
    expect(created.id).toMatch(/^[a-z0-9]{10}$/)
    expect(created.value).toMatch(/^[A-Za-z0-9]{40}$/)
    expect(created.createdDate).toEqual(new Date(NOW))
    expect(created.tags).toEqual({ team: 'a' })

    const fetched = await client.send(
      new GetApiKeyCommand({ apiKey: created.id, includeValue: true }),
    )
    expect(fetched.value).toBe(created.value)
    expect((await client.send(new GetApiKeyCommand({ apiKey: created.id }))).value).toBeUndefined()

    for (let i = 0; i < 4; i += 1) {
      await client.send(new CreateApiKeyCommand({ name: `bulk-${i}`, enabled: false }))
    }
    const pages = []
    for await (const page of paginateGetApiKeys({ client, pageSize: 2 }, { includeValues: true })) {
      pages.push(page.items ?? [])
    }
    expect(pages.map((items) => items.length)).toEqual([2, 2, 1])
    expect(pages.flat().every((key) => typeof key.value === 'string')).toBe(true)

    const disabled = await client.send(
      new UpdateApiKeyCommand({
        apiKey: created.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: 'false' }],
      }),
    )
    expect(disabled.enabled).toBe(false)

    await expect(
      client.send(new CreateApiKeyCommand({ name: 'twin', value: created.value })),
    ).rejects.toBeInstanceOf(ConflictException)
    await client.send(new DeleteApiKeyCommand({ apiKey: created.id }))
    await expect(client.send(new GetApiKeyCommand({ apiKey: created.id }))).rejects.toBeInstanceOf(
      NotFoundException,
    )
  })

  it('keeps usage plans with their tags and stages, their keys, one plan per key and stage', async () => {
    const free = await createPlan('petstore-local-free', { [PLAN_TAGS.plan]: 'free' })
    const pro = await createPlan('petstore-local-pro', { [PLAN_TAGS.plan]: 'pro' })
    expect(free).toMatchObject({
      apiStages: [{ apiId: 'local', stage: 'local' }],
      throttle: { rateLimit: 2, burstLimit: 120 },
      quota: { limit: 3000, period: 'DAY' },
      tags: { [PLAN_TAGS.plan]: 'free' },
    })
    const key = await client.send(new CreateApiKeyCommand({ name: 'bob', enabled: true }))
    await client.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: free.id, keyId: key.id, keyType: 'API_KEY' }),
    )
    // API Gateway: one usage plan per key and API stage.
    await expect(
      client.send(
        new CreateUsagePlanKeyCommand({ usagePlanId: pro.id, keyId: key.id, keyType: 'API_KEY' }),
      ),
    ).rejects.toBeInstanceOf(ConflictException)
    expect(
      (await client.send(new GetUsagePlanKeysCommand({ usagePlanId: free.id }))).items,
    ).toEqual([{ id: key.id, type: 'API_KEY', name: 'bob' }])
    expect(
      (await client.send(new GetUsagePlansCommand({ keyId: key.id }))).items?.map((p) => p.id),
    ).toEqual([free.id])

    used.set(key.value as string, 7)
    const usage = await client.send(
      new GetUsageCommand({
        usagePlanId: free.id,
        startDate: '2026-11-21',
        endDate: TODAY,
        keyId: key.id,
      }),
    )
    expect(usage.items).toEqual({
      [key.id as string]: [
        [0, 3000],
        [7, 2993],
      ],
    })

    await client.send(new DeleteUsagePlanKeyCommand({ usagePlanId: free.id, keyId: key.id }))
    await client.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: pro.id, keyId: key.id, keyType: 'API_KEY' }),
    )
    await client.send(new DeleteApiKeyCommand({ apiKey: key.id }))
    expect((await client.send(new GetUsagePlanKeysCommand({ usagePlanId: pro.id }))).items).toEqual(
      [],
    )
  })

  it('tags API keys and usage plans by ARN', async () => {
    const key = await client.send(new CreateApiKeyCommand({ name: 'tagged' }))
    const arn = `arn:aws:apigateway:eu-central-1::/apikeys/${key.id}`
    await client.send(new TagResourceCommand({ resourceArn: arn, tags: { a: '1', b: '2' } }))
    await client.send(new UntagResourceCommand({ resourceArn: arn, tagKeys: ['a'] }))
    expect((await client.send(new GetTagsCommand({ resourceArn: arn }))).tags).toEqual({ b: '2' })
    expect((await client.send(new GetApiKeyCommand({ apiKey: key.id }))).tags).toEqual({ b: '2' })
  })

  it("flushes the local stage's authorizer cache, and no other stage's", async () => {
    await client.send(
      new FlushStageAuthorizersCacheCommand({ restApiId: 'local', stageName: 'local' }),
    )
    expect(flushes).toEqual(['flushed'])
    await expect(
      client.send(
        new FlushStageAuthorizersCacheCommand({ restApiId: 'other', stageName: 'local' }),
      ),
    ).rejects.toBeInstanceOf(NotFoundException)
  })

  it('is read by the real key source as the key sync reads API Gateway', async () => {
    const plan = await createPlan('petstore-local-business', { [PLAN_TAGS.plan]: 'business' })
    const key = await client.send(new CreateApiKeyCommand({ name: 'carol', enabled: true }))
    await client.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: plan.id, keyId: key.id, keyType: 'API_KEY' }),
    )
    const snapshot = await new ApiGatewayKeySource({
      client,
      restApiId: 'local',
      stage: 'local',
      pageSize: 2,
    }).read()
    expect(snapshot.entries).toContainEqual({
      keyHash: hashApiKey(key.value as string),
      keyId: key.id,
      enabled: true,
      plan: 'business',
      perMinute: 1_000,
      perDay: 100_000,
      usagePlanId: plan.id,
    })
  })
})
