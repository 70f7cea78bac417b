import { PutCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import { KeyMirrorStore } from '#functions/authorizer/key-mirror-store.ts'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey, type KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorRepository } from '#shared/data/key-mirror-repository.ts'
import { lambdaContext, tokenAuthorizerEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { createKeyMirrorTable } from '#test/support/key-mirror-table.ts'

let env: DynamoTestEnv
let tableName: string
let store: KeyMirrorStore

const SYNCED_AT = '2027-03-05T10:00:00.000Z'
const keyValue = (name: string) => `${name}-value-0123456789abcdef`

const put = (name: string, change: Partial<Record<keyof KeyMirrorItem, unknown>> = {}) =>
  env.documentClient.send(
    new PutCommand({
      TableName: tableName,
      Item: {
        keyHash: hashApiKey(keyValue(name)),
        keyId: `id-${name}`,
        enabled: true,
        plan: 'enterprise',
        perMinute: 7_000,
        perDay: 2_000_000,
        usagePlanId: 'plan-acme',
        syncedAt: SYNCED_AT,
        ...change,
      },
    }),
  )

beforeAll(async () => {
  env = await startDynamoTestEnv()
  tableName = await createKeyMirrorTable(env)
  store = new KeyMirrorStore({
    mirror: new KeyMirrorRepository({
      client: env.documentClient,
      tableName,
      logger: fakeLogger(),
    }),
  })
  await put('acme')
  await put('disabled', { enabled: false })
  await put('bad-plan', { plan: 'gold' })
  await put('bad-limits', { perMinute: -1 })
})
afterAll(async () => {
  await env?.close()
})

describe('KeyMirrorStore against DynamoDB', () => {
  it('returns the record of an enabled key: API Gateway key id, plan and limits', async () => {
    expect(await store.lookup(keyValue('acme'))).toEqual({
      id: 'id-acme',
      plan: 'enterprise',
      limits: { perMinute: 7_000, perDay: 2_000_000 },
    })
  })

  it.each(['unknown', 'disabled', 'bad-plan', 'bad-limits'])('knows no %s key', async (name) => {
    expect(await store.lookup(keyValue(name))).toBeUndefined()
  })

  it('throws when DynamoDB fails, so the authorizer answers 500 rather than 401', async () => {
    const failing = new KeyMirrorStore({
      mirror: new KeyMirrorRepository({
        client: createDocumentClient({
          endpoint: env.endpoint,
          region: 'us-east-1',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          maxAttempts: 1,
        }),
        tableName: 'no-such-table',
      }),
    })
    await expect(failing.lookup(keyValue('acme'))).rejects.toThrow()

    const handler = authorizerHandler({ keyStore: failing, logger: fakeLogger() })
    const error = await handler(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('acme')}` }),
      lambdaContext(),
    ).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).not.toBe(UNAUTHORIZED)
  })

  it('lets the authorizer allow a mirrored key and deny the others', async () => {
    const handler = authorizerHandler({ keyStore: store, logger: fakeLogger() })
    const allowed = await handler(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('acme')}` }),
      lambdaContext(),
    )
    expect(allowed).toMatchObject({
      principalId: 'id-acme',
      usageIdentifierKey: keyValue('acme'),
      context: { keyId: 'id-acme', plan: 'enterprise', perMinute: 7_000, perDay: 2_000_000 },
    })
    await expect(
      handler(
        tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValue('disabled')}` }),
        lambdaContext(),
      ),
    ).rejects.toThrow(UNAUTHORIZED)
  })
})
