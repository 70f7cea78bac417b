import {
  type APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  GetUsagePlansCommand,
  UpdateApiKeyCommand,
} from '@aws-sdk/client-api-gateway'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isPoolPlan } from '#keys/usage-plans-config.ts'
import { heldTimers } from '#test/support/held-timers.ts'
import {
  type InProcessServer,
  managementClient,
  startInProcessServer,
  statusOf,
} from '#test/support/local-server.ts'

/**
 * A change made through the local control plane names its plan and key ids to the key sync, as
 * its CloudTrail event does on AWS, so the run after it reads those plans first wherever the
 * rotation through the plans stands. A run cut short by its time budget leaves the rotation
 * mid-way; the next run without named ids reads only the plans after that point. This clock
 * moves 40 s every time it is read while `stalled`, as a stalled machine would look to a run: the
 * run reads one plan (the first is always read) and stops.
 */
let now = Date.UTC(2026, 10, 26, 12, 0, 0)
let stalled = false
const clock = () => {
  if (stalled) now += 40_000
  return now
}

let server: InProcessServer
let client: APIGatewayClient
/** The stage's plans in the rotation's order (by id). */
let planIds: string[]

beforeAll(async () => {
  server = await startInProcessServer({ PETSTORE_API_KEYS: '' }, { clock, timers: heldTimers() })
  client = managementClient(server)
  const { items = [] } = await client.send(new GetUsagePlansCommand({}))
  // The customers' plans: the pool plan of store keys is no plan the sync reads.
  planIds = items
    .filter((plan) => !isPoolPlan(plan.tags))
    .map((plan) => plan.id as string)
    .sort()
})
afterAll(async () => {
  client?.destroy()
  await server?.stop()
})

/** A sync run that reads one plan and leaves the rotation after the first plan. */
const runCutShort = async () => {
  stalled = true
  try {
    return await server.syncKeys()
  } finally {
    stalled = false
  }
}

const status = (value: string) => statusOf(server.baseUrl, value)

describe('a change after a sync run was cut short by its budget', () => {
  it('is in force after the next run, on the plan the rotation has passed', async () => {
    expect(planIds).toHaveLength(4)
    const first = planIds[0] as string
    expect(await runCutShort()).toMatchObject({ plansRead: 1, complete: false })

    const key = await client.send(new CreateApiKeyCommand({ name: 'after-a-cut', enabled: true }))
    await client.send(
      new CreateUsagePlanKeyCommand({ usagePlanId: first, keyId: key.id, keyType: 'API_KEY' }),
    )
    expect(await server.syncKeys()).toMatchObject({ plansRead: 1 })
    expect(await status(key.value as string)).toBe(200)

    expect(await runCutShort()).toMatchObject({ plansRead: 1, complete: false })
    await client.send(
      new UpdateApiKeyCommand({
        apiKey: key.id,
        patchOperations: [{ op: 'replace', path: '/enabled', value: 'false' }],
      }),
    )
    await server.syncKeys()
    expect(await status(key.value as string)).toBe(401)
  })
})
