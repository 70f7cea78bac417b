import { randomBytes } from 'node:crypto'
import { APIGatewayClient } from '@aws-sdk/client-api-gateway'
import type { APIGatewayAuthorizerResult } from 'aws-lambda'
import { mockClient } from 'aws-sdk-client-mock'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { percentile } from '#bench/bench-stats.ts'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import {
  keySyncContext,
  lambdaContext,
  scheduledEvent,
  tokenAuthorizerEvent,
} from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { FakeApiGateway, keyValueOf, planTags } from '#test/support/fake-api-gateway.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'
import { testKeyStore } from '#test/support/test-key-store.ts'
import { scaled } from '#test/support/test-scale.ts'

/**
 * A traffic spike on cold authorizers: INSTANCES fresh instances (each its own handler,
 * StageKeyStore and DynamoDB client, as separate Lambda instances would have), REQUESTS
 * requests of valid keys, random well-formed tokens and known-but-refused keys (disabled, or on
 * an untagged plan). Every AWS call is counted, the authorizer's cost contract: DynamoDB GetItem
 * calls only, one per request, and no API Gateway management call at all (an account-wide quota
 * of 10 requests/s), however cold or random.
 */
const INSTANCES = 50
/** PETSTORE_TEST_SCALE or PETSTORE_AUTHORIZER_REQUESTS widens the spike (test/support/test-scale.ts). */
const REQUESTS = scaled(1_000, 'PETSTORE_AUTHORIZER_REQUESTS')

const silentLogger: AppLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
}

/** Deterministic mix (mulberry32), so a failure can be replayed. */
const seededRandom = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

type Kind = 'valid' | 'random' | 'refused'
interface Request {
  kind: Kind
  token: string
  keyId?: string
}

let env: DynamoTestEnv

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

describe('authorizer load simulation', () => {
  it(`serves ${REQUESTS} requests on ${INSTANCES} cold instances with GetItem calls only (cost contract: one per request)`, async () => {
    // API Gateway: 4 valid plans of this stage, 1 untagged plan, 1 plan of another stage.
    const gateway = new FakeApiGateway()
    gateway.addPlan('plan-free', { tags: planTags('free') })
    gateway.addPlan('plan-pro', { tags: planTags('pro') })
    gateway.addPlan('plan-business', { tags: planTags('business') })
    gateway.addPlan('plan-acme', {
      tags: planTags('enterprise', { perMinute: 7_000, perDay: 2e6 }),
    })
    gateway.addPlan('plan-untagged')
    gateway.addPlan('plan-staging', { tags: planTags('pro'), stage: 'staging' })
    const planIds = ['plan-free', 'plan-pro', 'plan-business', 'plan-acme']
    const validKeyIds: string[] = []
    const refusedKeyIds: string[] = []
    for (let n = 0; n < 400; n += 1) {
      const keyId = `key-${n}`
      if (n % 10 === 0) {
        gateway.addKey(keyId, planIds[n % 4], { enabled: false })
        refusedKeyIds.push(keyId)
      } else if (n % 10 === 1) {
        gateway.addKey(keyId, n % 20 === 1 ? 'plan-untagged' : 'plan-staging')
        refusedKeyIds.push(keyId)
      } else {
        gateway.addKey(keyId, planIds[n % 4])
        validKeyIds.push(keyId)
      }
    }

    const { handler: sync, tableName } = await createKeySyncHarness({
      env,
      gateway,
      clock: Date.now,
    })
    const synced = await sync(scheduledEvent, keySyncContext())
    expect(synced.upserted).toBe(validKeyIds.length)

    // The request mix: 40 % valid keys, 50 % random tokens, 10 % known but refused keys.
    const random = seededRandom(20_270_305)
    const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)] as T
    const requests: Request[] = Array.from({ length: REQUESTS }, () => {
      const roll = random()
      if (roll < 0.4) {
        const keyId = pick(validKeyIds)
        return { kind: 'valid', token: keyValueOf(keyId), keyId }
      }
      if (roll < 0.9) {
        const length = 20 + Math.floor(random() * 60)
        return { kind: 'random', token: randomBytes(64).toString('base64url').slice(0, length) }
      }
      const keyId = pick(refusedKeyIds)
      return { kind: 'refused', token: keyValueOf(keyId), keyId }
    })

    // Every AWS call from here on is counted: DynamoDB per command, API Gateway on any client.
    const apiGatewaySpy = mockClient(APIGatewayClient)
    const dynamoCommands: Record<string, number> = {}
    const config = {
      endpoint: env.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
    }
    const instances = Array.from({ length: INSTANCES }, () => {
      const client = createDocumentClient(config)
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const name = String(context.commandName)
          dynamoCommands[name] = (dynamoCommands[name] ?? 0) + 1
          return next(args)
        },
        { step: 'initialize', name: 'countCommands' },
      )
      const handler = authorizerHandler({
        keyStore: testKeyStore({ mirror: new KeyMirrorReader({ client, tableName }) }),
        logger: silentLogger,
      })
      return { client, handler }
    })

    const outcomes: Record<Kind, { allowed: number; denied: number }> = {
      valid: { allowed: 0, denied: 0 },
      random: { allowed: 0, denied: 0 },
      refused: { allowed: 0, denied: 0 },
    }
    const wrongKeyIds: string[] = []
    const errors: unknown[] = []
    const latenciesMs: number[] = []
    let next = 0
    const started = performance.now()
    try {
      // Each instance takes the next request when free, one at a time, as Lambda does.
      await Promise.all(
        instances.map(async ({ handler }) => {
          while (next < requests.length) {
            const request = requests[next++] as Request
            const start = performance.now()
            try {
              const result: APIGatewayAuthorizerResult = await handler(
                tokenAuthorizerEvent({ authorizationToken: `Bearer ${request.token}` }),
                lambdaContext(),
              )
              outcomes[request.kind].allowed += 1
              if (result.principalId !== request.keyId) wrongKeyIds.push(result.principalId)
            } catch (error) {
              if ((error as Error).message === UNAUTHORIZED) outcomes[request.kind].denied += 1
              else errors.push(error)
            } finally {
              latenciesMs.push(performance.now() - start)
            }
          }
        }),
      )
    } finally {
      apiGatewaySpy.restore()
      for (const { client } of instances) client.destroy()
    }
    const elapsedMs = performance.now() - started
    latenciesMs.sort((a, b) => a - b)

    const count = (kind: Kind) => requests.filter((request) => request.kind === kind).length
    const managementCalls = apiGatewaySpy.calls().length
    console.log(
      [
        `requests ${REQUESTS} on ${INSTANCES} cold instances in ${elapsedMs.toFixed(0)} ms`,
        `  valid ${count('valid')}: allowed ${outcomes.valid.allowed}, denied ${outcomes.valid.denied}`,
        `  random ${count('random')}: allowed ${outcomes.random.allowed}, denied ${outcomes.random.denied}`,
        `  refused ${count('refused')}: allowed ${outcomes.refused.allowed}, denied ${outcomes.refused.denied}`,
        `  DynamoDB commands ${JSON.stringify(dynamoCommands)}`,
        `  API Gateway management calls ${managementCalls} (sync before the spike: ${synced.managementCalls})`,
        `  latency on dynalite: p50 ${percentile(latenciesMs, 50).toFixed(2)} ms, p99 ${percentile(latenciesMs, 99).toFixed(2)} ms`,
      ].join('\n'),
    )

    expect(errors).toEqual([])
    expect(outcomes.valid).toEqual({ allowed: count('valid'), denied: 0 })
    expect(outcomes.random).toEqual({ allowed: 0, denied: count('random') })
    expect(outcomes.refused).toEqual({ allowed: 0, denied: count('refused') })
    expect(wrongKeyIds).toEqual([])
    expect(dynamoCommands).toEqual({ GetItemCommand: REQUESTS })
    expect(managementCalls).toBe(0)
  }, 180_000)
})
