import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorizerHandler } from '#functions/authorizer/authorizer-handler.ts'
import type {
  DiffScope,
  KeyMirrorWriter,
  MirrorDiff,
  ReplaceAllResult,
} from '#keys/key-mirror-writer.ts'
import { UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import type { KeyMirrorEntry } from '#shared/data/key-mirror-item.ts'
import {
  keySyncContext,
  lambdaContext,
  scheduledEvent,
  tokenAuthorizerEvent,
} from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { FakeApiGateway, keyValueOf, planTags } from '#test/support/fake-api-gateway.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'
import { createKeySyncHarness } from '#test/support/key-sync-harness.ts'
import { testKeyStore } from '#test/support/test-key-store.ts'

/**
 * How long a key change takes to reach callers, on real components (key source, sync handler,
 * mirror and state repositories on DynamoDB, cache flusher, StageKeyStore, authorizer handler)
 * with an injected clock:
 *
 * - The schedule starts a sync every SYNC_PERIOD s; a run reads API Gateway at its start and
 *   lands in the mirror SYNC_DURATION s later (modelled by holding its write).
 * - API Gateway caches the authorizer's answer per token for the stage's TTL (staging 60 s,
 *   production 300 s). Denials are modelled as cached too: the worst case for a new key a client
 *   tried before it was mirrored. A run that changed the mirror flushes that cache
 *   (FlushStageAuthorizersCache), and the model drops every cached answer then.
 *
 * A change made just after a run's read is seen by the next run, which lands at most
 * SYNC_PERIOD + SYNC_DURATION later and flushes the cache: a disabled, detached or new key takes
 * effect within 60 + d s (d: a run's duration, about a second for a few plans), whatever the
 * TTL: within the two minutes the API promises. CloudTrail management events usually start a run
 * sooner; the bound does not rely on them.
 */
const SYNC_PERIOD = 60
const SYNC_DURATION = 3
const CHANGE_AT = SYNC_PERIOD + 1
const NEXT_SYNC_LANDS = 2 * SYNC_PERIOD + SYNC_DURATION
const AUTHORIZER_WATCHED_UNTIL = NEXT_SYNC_LANDS + SYNC_PERIOD

let env: DynamoTestEnv

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

/** The real repository, whose writes land only when the simulated sync duration is over. */
class SlowMirror {
  #repository: KeyMirrorWriter | undefined
  #held: (() => Promise<void>) | undefined
  #onHeld: (() => void) | undefined

  wrap(repository: KeyMirrorWriter): this {
    this.#repository = repository
    return this
  }

  #real(): KeyMirrorWriter {
    if (!this.#repository) throw new Error('SlowMirror.wrap() was not called')
    return this.#repository
  }

  diff(entries: KeyMirrorEntry[], scope?: DiffScope): Promise<MirrorDiff> {
    return this.#real().diff(entries, scope)
  }

  apply(
    diff: Pick<MirrorDiff, 'entries' | 'changed' | 'stale'>,
    syncedAt: string,
    options?: { remove?: readonly string[] },
  ): Promise<ReplaceAllResult> {
    return new Promise((resolve, reject) => {
      this.#held = () => this.#real().apply(diff, syncedAt, options).then(resolve, reject)
      this.#onHeld?.()
    })
  }

  /** Resolves once a started run has read API Gateway and is waiting to write. */
  held(): Promise<void> {
    return this.#held ? Promise.resolve() : new Promise((resolve) => (this.#onHeld = resolve))
  }

  async land(): Promise<void> {
    const write = this.#held
    this.#held = undefined
    this.#onHeld = undefined
    await write?.()
  }
}

type Decision = 'allow' | 'deny'

interface ClientPlan {
  keyId: string
  /** Seconds at which the client starts calling once a second. */
  from: number
}

interface Timeline {
  /** keyId → answer the client got at each second (from its start). */
  gateway: Map<string, Map<number, Decision>>
  /**
   * keyId → the authorizer's own answer each second, without API Gateway's cache, until
   * AUTHORIZER_WATCHED_UNTIL.
   */
  authorizer: Map<string, Map<number, Decision>>
  managementCalls: number
  syncs: number
  flushes: number
}

/**
 * Runs `until` seconds: operator changes at their second, then a sync start (every
 * SYNC_PERIOD) or landing (SYNC_DURATION later), then the clients' requests through a model
 * of API Gateway's authorizer cache.
 */
const simulate = async (options: {
  ttl: number
  until: number
  setUp: (gateway: FakeApiGateway) => void
  changes: Record<number, (gateway: FakeApiGateway) => void>
  clients: ClientPlan[]
}): Promise<Timeline> => {
  let nowMs = 0
  const clock = () => nowMs
  const gateway = new FakeApiGateway()
  options.setUp(gateway)
  const cache = new Map<string, { decision: Decision; expiresAtMs: number }>()
  gateway.onFlush = () => cache.clear()
  const mirror = new SlowMirror()
  const { handler: sync, mirror: repository } = await createKeySyncHarness({
    env,
    gateway,
    clock,
    wrapMirror: (real) => mirror.wrap(real),
  })
  const authorizer = authorizerHandler({
    keyStore: testKeyStore({ mirror: repository }),
    logger: fakeLogger(),
  })
  const authorize = (keyId: string): Promise<Decision> =>
    authorizer(
      tokenAuthorizerEvent({ authorizationToken: `Bearer ${keyValueOf(keyId)}` }),
      lambdaContext(),
    ).then(
      () => 'allow',
      (error: Error) => {
        if (error.message === UNAUTHORIZED) return 'deny'
        throw error
      },
    )
  const timeline: Timeline = {
    gateway: new Map(),
    authorizer: new Map(),
    managementCalls: 0,
    syncs: 0,
    flushes: 0,
  }
  for (const { keyId } of options.clients) {
    timeline.gateway.set(keyId, new Map())
    timeline.authorizer.set(keyId, new Map())
  }

  let running: Promise<unknown> | undefined
  for (let second = 0; second <= options.until; second += 1) {
    nowMs = second * 1_000
    options.changes[second]?.(gateway)
    if (second % SYNC_PERIOD === 0) {
      running = sync(scheduledEvent, keySyncContext())
      await mirror.held()
      timeline.syncs += 1
    }
    if (second % SYNC_PERIOD === SYNC_DURATION) {
      await mirror.land()
      await running
    }
    for (const { keyId, from } of options.clients) {
      // The authorizer's own answer changes only when a run lands: watched through the landing
      // of the run after the one that carries the change, it is seen to settle and to stay.
      if (second <= AUTHORIZER_WATCHED_UNTIL) {
        timeline.authorizer.get(keyId)?.set(second, await authorize(keyId))
      }
      if (second < from) continue
      const cached = cache.get(keyId)
      let decision = cached && nowMs < cached.expiresAtMs ? cached.decision : undefined
      if (!decision) {
        decision = await authorize(keyId)
        cache.set(keyId, { decision, expiresAtMs: nowMs + options.ttl * 1_000 })
      }
      timeline.gateway.get(keyId)?.set(second, decision)
    }
  }
  timeline.managementCalls = gateway.totalCalls()
  timeline.flushes = gateway.flushes.length
  return timeline
}

/** The first second from which the answer is `decision` for good. */
const settlesAt = (answers: Map<number, Decision> | undefined, decision: Decision): number => {
  const seconds = [...(answers ?? new Map()).entries()].sort(([a], [b]) => a - b)
  let since = Number.NaN
  for (const [second, answer] of seconds) {
    if (answer !== decision) since = Number.NaN
    else if (Number.isNaN(since)) since = second
  }
  return since
}

describe.each([
  ['staging', 60],
  ['production', 300],
])('key change propagation on %s (authorizer cache TTL %i s)', (_, ttl) => {
  // The cache flush takes the TTL out of the bound: within the two minutes the API promises.
  const bound = SYNC_PERIOD + SYNC_DURATION
  const until = NEXT_SYNC_LANDS + ttl + SYNC_PERIOD

  it(`stops accepting a disabled or detached key within ${SYNC_PERIOD} + ${SYNC_DURATION} s, whatever the TTL`, async () => {
    const timeline = await simulate({
      ttl,
      until,
      setUp: (gateway) => {
        gateway.addPlan('plan-pro', { tags: planTags('pro') })
        for (const id of ['key-disabled', 'key-detached', 'key-worst', 'key-kept']) {
          gateway.addKey(id, 'plan-pro')
        }
        // Three of eight keys go: a revocation, not a removal the per-plan guard would hold.
        for (const n of [1, 2, 3, 4]) gateway.addKey(`key-spare-${n}`, 'plan-pro')
      },
      // Just after the run at SYNC_PERIOD read API Gateway: the worst moment for a change.
      changes: {
        [CHANGE_AT]: (gateway) => {
          gateway.setEnabled('key-disabled', false)
          gateway.detach('key-detached', 'plan-pro')
          gateway.setEnabled('key-worst', false)
        },
      },
      clients: [
        { keyId: 'key-disabled', from: SYNC_DURATION },
        { keyId: 'key-detached', from: SYNC_DURATION },
        // Its cached Allow is renewed one second before the next run lands: the worst case.
        { keyId: 'key-worst', from: NEXT_SYNC_LANDS - 1 },
        { keyId: 'key-kept', from: SYNC_DURATION },
      ],
    })

    for (const keyId of ['key-disabled', 'key-detached', 'key-worst']) {
      // The authorizer itself refuses the key from the moment the next run lands.
      expect(settlesAt(timeline.authorizer.get(keyId), 'deny')).toBe(NEXT_SYNC_LANDS)
      expect(timeline.authorizer.get(keyId)?.get(NEXT_SYNC_LANDS - 1)).toBe('allow')
      const latency = settlesAt(timeline.gateway.get(keyId), 'deny') - CHANGE_AT
      expect(latency).toBeLessThanOrEqual(bound)
      console.log(`TTL ${ttl} s: ${keyId} refused ${latency} s after the change (bound ${bound} s)`)
    }
    // Even an Allow cached a second before the run lands ends with it: the flush drops it.
    expect(settlesAt(timeline.gateway.get('key-worst'), 'deny')).toBe(NEXT_SYNC_LANDS)
    expect([...(timeline.gateway.get('key-kept')?.values() ?? [])]).not.toContain('deny')
    // Only the sync calls API Gateway: 3 reads a run (1 plan page, 1 key page, 1 API key page),
    // and a flush after each of the 2 runs that changed the mirror (the first and the next), and
    // once more on the run after each (for a decision cached from a read just before the writes).
    expect(timeline.flushes).toBe(4)
    expect(timeline.managementCalls).toBe(3 * timeline.syncs + timeline.flushes)
  })

  it(`starts accepting a new key within ${SYNC_PERIOD} + ${SYNC_DURATION} s, whatever the TTL`, async () => {
    const timeline = await simulate({
      ttl,
      until,
      setUp: (gateway) => gateway.addPlan('plan-pro', { tags: planTags('pro') }),
      changes: {
        [CHANGE_AT]: (gateway) => {
          gateway.addKey('key-eager', 'plan-pro')
          gateway.addKey('key-patient', 'plan-pro')
        },
      },
      clients: [
        // Tries the key at once, every second: its 401s are cached too.
        { keyId: 'key-eager', from: CHANGE_AT + 1 },
        // First tries it once the next run has landed.
        { keyId: 'key-patient', from: NEXT_SYNC_LANDS },
      ],
    })

    for (const keyId of ['key-eager', 'key-patient']) {
      expect(settlesAt(timeline.authorizer.get(keyId), 'allow')).toBe(NEXT_SYNC_LANDS)
      const latency = settlesAt(timeline.gateway.get(keyId), 'allow') - CHANGE_AT
      expect(latency).toBeLessThanOrEqual(bound)
      console.log(`TTL ${ttl} s: ${keyId} accepted ${latency} s after creation (bound ${bound} s)`)
    }
    // The 401s cached while the key was tried too early end with the landing run's flush.
    expect(settlesAt(timeline.gateway.get('key-eager'), 'allow')).toBe(NEXT_SYNC_LANDS)
    expect(settlesAt(timeline.gateway.get('key-patient'), 'allow') - CHANGE_AT).toBe(
      NEXT_SYNC_LANDS - CHANGE_AT,
    )
  })
})
