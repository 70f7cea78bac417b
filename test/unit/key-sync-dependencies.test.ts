import { describe, expect, it } from 'vitest'
import {
  createKeySyncApiGatewayClient,
  keySyncDependencies,
} from '#functions/key-sync/key-sync-dependencies.ts'

const ENV = {
  KEY_MIRROR_TABLE_NAME: 'petstore-production-key-mirror',
  REST_API_ID: 'a1b2c3d4e5',
  API_STAGE: 'production',
  AWS_REGION: 'eu-west-1',
}

describe('key-sync dependencies', () => {
  it.each(['KEY_MIRROR_TABLE_NAME', 'REST_API_ID', 'API_STAGE'])(
    'fail the cold start without %s',
    (name) => {
      expect(() => keySyncDependencies({ ...ENV, [name]: ' ' })).toThrow(
        `Missing required environment variable ${name}`,
      )
    },
  )

  it('build from a complete environment', () => {
    const deps = keySyncDependencies(ENV)
    expect(deps.middlewares).toHaveLength(2)
  })

  it('give the management client a NodeHttpHandler with timeouts and few attempts', async () => {
    const client = createKeySyncApiGatewayClient()
    const handler = client.config.requestHandler as unknown as {
      constructor: { name: string }
      configProvider: Promise<{ connectionTimeout?: number; requestTimeout?: number }>
    }
    expect(handler.constructor.name).toBe('NodeHttpHandler')
    expect(await handler.configProvider).toMatchObject({
      connectionTimeout: 2_000,
      requestTimeout: 5_000,
    })
    expect(await client.config.maxAttempts()).toBe(2)
    client.destroy()
  })
})
