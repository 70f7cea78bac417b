import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RUN_BUDGET } from '#functions/key-sync/key-sync-run.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { SYNC_TIMEOUT_MS, simulateKeySyncAtScale } from '#test/support/key-sync-simulation.ts'

/**
 * The key sync at AWS's ceilings (1,000 stage plans, 10,000 keys) on a virtual clock, every
 * management call 100–200 ms: a console change must be in force within 2 minutes of its event,
 * and no run may be ended by its timeout (a killed run writes nothing and keeps its lease).
 * `npm run bench:key-sync` prints the same at 4, 100, 300 and 1,000 plans.
 */
let env: DynamoTestEnv
beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

describe('the key sync at 1,000 plans and 10,000 keys', () => {
  it('mirrors every key in runs that each end before the timeout, leaving no lease', {
    timeout: 120_000,
  }, async () => {
    const result = await simulateKeySyncAtScale(env, 1_000, 10_000)

    expect(result.mirrored).toBe(10_000)
    expect(result.leaseKept).toBe(false)
    // A run reads for its rotation budget, then what events named, and keeps its reserve.
    expect(result.longestRunMs).toBeLessThanOrEqual(SYNC_TIMEOUT_MS - RUN_BUDGET.reserveMs)
    expect(result.runs).toBeGreaterThan(1)
    // A key attached in the console is in force within seconds of its event, and within one run
    // when the event arrives while a scheduled run reads.
    expect(result.changeIdleMs).toBeLessThan(10_000)
    expect(result.changeMidRunMs).toBeLessThan(SYNC_TIMEOUT_MS)
  })
})
