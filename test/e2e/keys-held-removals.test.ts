import { TagResourceCommand } from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PLAN_TAGS } from '#shared/config/plans-config.ts'
import { keysCommandOn } from '#test/support/keys-command-runner.ts'
import {
  type InProcessServer,
  managementClient,
  startInProcessServer,
  statusOf,
} from '#test/support/local-server.ts'

/**
 * A plan that loses its tag (a typo in the console) keeps its keys working until an operator
 * looks: `keys held` shows the hold and `keys confirm` applies it, on the local server as on a
 * deployed stage.
 */
let server: InProcessServer
let _origin: string

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: '' })
  _origin = new URL(server.baseUrl).origin
})
afterAll(async () => {
  await server?.stop()
})

/** The keys CLI against the server (its secret, `--url` its origin). */
const keys = (...args: string[]) => keysCommandOn(server)(...args)

const status = (key: string) => statusOf(server.baseUrl, key)

describe('keys held and keys confirm, locally', () => {
  it("holds a mistagged plan's keys until confirmed, then removes them", async () => {
    const plan = await keys(
      'plan',
      'create',
      '--customer',
      'acme',
      '--per-minute',
      '100',
      '--per-day',
      '1000',
    )
    expect(plan.code, plan.stderr).toBe(0)
    const planId = plan.stdout.trim()
    const made = await keys('create', '--customer', 'acme', '--name', 'acme-1')
    expect(made.code, made.stderr).toBe(0)
    const key = made.stdout.trim()
    const keyId = /created key (\w+)/.exec(made.stderr)?.[1] as string

    const management = managementClient(server)
    try {
      await management.send(
        new TagResourceCommand({
          resourceArn: `arn:aws:apigateway:us-east-1::/usageplans/${planId}`,
          tags: { [PLAN_TAGS.plan]: 'enterprse' },
        }),
      )
    } finally {
      management.destroy()
    }
    await server.syncKeys()
    expect(await status(key)).toBe(200)

    const held = await keys('held')
    expect(held.code, held.stderr).toBe(0)
    expect(held.stdout).toContain(`usage plan ${planId}: 1 key(s) held since`)
    expect(held.stdout).toContain(keyId)
    expect(held.stdout).toContain(`confirm ${planId}`)

    const asJson = await keys('held', '--json')
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      [planId]: { count: 1, cause: 'plan-lost', keyIds: [keyId] },
    })

    const confirmed = await keys('confirm', planId, '--json')
    expect(confirmed.code, confirmed.stderr).toBe(0)
    expect(JSON.parse(confirmed.stdout)).toEqual({ deleted: 1 })
    expect(await status(key)).toBe(401)
    expect((await keys('held')).stderr).toContain('the key sync holds no removal')
  })
})
