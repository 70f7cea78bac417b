import { addressMatcher } from '#functions/address-block/address-block-run.ts'
import { DEFAULT_ENTERPRISE_LIMITS, type PlanLimits } from '#shared/config/plans-config.ts'
import { STAGES } from '#shared/config/stages-config.ts'
import {
  defaultEdgeNumbers,
  EDGE_ANSWERS,
  EDGE_RULES,
  type EdgeAnswerName,
  type EdgeNumbers,
  type EdgeRule,
  inScope,
  keyCounterOf,
  PREFLIGHT_METHOD,
} from '#shared/edge/edge-rules-config.ts'
import { HttpError, retryAfterHeaders } from '#shared/errors/http-error.ts'
import type { Clock } from '#shared/time/clock.ts'

/**
 * The stage's WAF web ACL, locally: the rules of shared/edge/edge-rules-config.ts, which the
 * CDK renders into the web ACL, with the same numbers (the staging stage's), evaluated as WAF
 * evaluates them: in order, the first that blocks decides, a rate rule counts what its scope
 * matches per instance over its trailing window and refuses past its limit. No rule refuses a
 * valid key below those ceilings because of other requests from its address. Two kinds of
 * request may also be delayed (never refused) beyond what WAF does, as neither can carry a valid
 * key (LocalEdgeDelays): preflights sent faster than the preflight ceiling's rate, and wrong keys
 * past a few a minute from one address. test/infra/local-edge-parity.test.ts holds the verdicts
 * to the synthesized web ACL's.
 */

/**
 * The local stage's edge numbers: staging's, whose template the local server follows (its
 * authorizer cache, its bundles), with the local Enterprise limits.
 */
export const localEdgeNumbers = (
  enterpriseLimits: PlanLimits = DEFAULT_ENTERPRISE_LIMITS,
): EdgeNumbers => defaultEdgeNumbers(STAGES.staging.throttleRateLimit, enterpriseLimits)

/** An address as API Gateway reports it: IPv4-mapped IPv6 (a dual-stack listener's) as IPv4. */
export const sourceAddressOf = (remoteAddress: string | undefined): string => {
  const address = remoteAddress ?? '127.0.0.1'
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  return mapped ? (mapped[1] as string) : address
}

/** What the edge needs of a request. */
export interface EdgeRequest {
  address: string
  method: string
  authorization: string | undefined
}

/** A refusal at the edge: the rule that refused, and its answer. */
export interface EdgeRefusal {
  rule: string
  answer: EdgeAnswerName
  error: HttpError
}

/**
 * The most recent times counted for one instance, at most `keep` of them: a rate rule only asks
 * whether more than its limit fall in its window, so limit + 1 times answer it exactly.
 */
class RecentTimes {
  #times: number[] = []
  #start = 0

  /** Counts `at` and returns how many counted times fall in (at - windowMs, at], up to `keep`. */
  count(at: number, windowMs: number, keep: number): number {
    this.#times.push(at)
    while (this.#times.length - this.#start > keep) this.#start += 1
    while (
      this.#start < this.#times.length &&
      (this.#times[this.#start] as number) <= at - windowMs
    )
      this.#start += 1
    if (this.#start > 1_024 && this.#start * 2 > this.#times.length) {
      this.#times = this.#times.slice(this.#start)
      this.#start = 0
    }
    return this.#times.length - this.#start
  }

  newest(): number {
    return this.#times.at(-1) ?? Number.NEGATIVE_INFINITY
  }
}

/** Instances one rule keeps at most (an old one goes first: it may only let more through). */
export const MAX_INSTANCES = 100_000

/** A rate rule's counters, per instance (an address, or a key header). */
class RateCounter {
  readonly #windowMs: number
  readonly #limit: number
  readonly #maxInstances: number
  readonly #instances = new Map<string, RecentTimes>()

  constructor(windowSeconds: number, limit: number, maxInstances: number) {
    this.#windowMs = windowSeconds * 1_000
    this.#limit = limit
    this.#maxInstances = maxInstances
  }

  /** Counts a request of `instance` at `at`; true when it is over the limit. */
  over(instance: string, at: number): boolean {
    let times = this.#instances.get(instance)
    if (times) this.#instances.delete(instance)
    else {
      times = new RecentTimes()
      for (const [oldest, kept] of this.#instances) {
        if (this.#instances.size < this.#maxInstances && kept.newest() > at - this.#windowMs) break
        this.#instances.delete(oldest)
      }
    }
    // Most recently used last: the first entries are the ones to drop.
    this.#instances.set(instance, times)
    return times.count(at, this.#windowMs, this.#limit + 1) > this.#limit
  }
}

export interface LocalEdgeOptions {
  numbers: EdgeNumbers
  clock: Clock
  /** Whether an address is on the operator's block list, or on the automatic block's. */
  blocked?: { operator?: (address: string) => boolean; automatic?: (address: string) => boolean }
  /** The known egress addresses (CIDRs) the per-address rules skip and no block list holds. */
  exempt?: readonly string[]
  /** Instances each rate rule keeps at most (MAX_INSTANCES). */
  maxInstances?: number
}

/** The edge's answer for a rule: the API's Error body, its Retry-After (static, as WAF's). */
const refusalOf = (rule: EdgeRule, numbers: EdgeNumbers): EdgeRefusal => {
  const answer = EDGE_ANSWERS[rule.answer]
  return {
    rule: rule.name,
    answer: rule.answer,
    error: new HttpError(answer.code, {
      ...('message' in answer ? { message: answer.message } : {}),
      headers: retryAfterHeaders(answer.retryAfterSeconds(numbers)),
    }),
  }
}

export class LocalEdge {
  readonly #numbers: EdgeNumbers
  readonly #clock: Clock
  readonly #blocked: NonNullable<LocalEdgeOptions['blocked']>
  readonly #exempt: (address: string) => boolean
  readonly #counters = new Map<string, RateCounter>()

  constructor({
    numbers,
    clock,
    blocked = {},
    exempt = [],
    maxInstances = MAX_INSTANCES,
  }: LocalEdgeOptions) {
    this.#numbers = numbers
    this.#clock = clock
    this.#blocked = blocked
    this.#exempt = addressMatcher(exempt)
    for (const rule of EDGE_RULES) {
      if (rule.type === 'rate') {
        this.#counters.set(
          rule.name,
          new RateCounter(rule.windowSeconds, rule.limit(numbers), maxInstances),
        )
      }
    }
  }

  get numbers(): EdgeNumbers {
    return this.#numbers
  }

  /** Whether an address is one of the known egress addresses. */
  exempt(address: string): boolean {
    return this.#exempt(address)
  }

  /** WAF's verdict on a request, counted as WAF counts it: a refusal, or undefined (it passes). */
  evaluate(request: EdgeRequest): EdgeRefusal | undefined {
    const at = this.#clock()
    const facts = { ...request, exempt: this.#exempt(request.address) }
    for (const rule of EDGE_RULES) {
      if (!inScope(rule.scope, facts)) continue
      if (rule.type === 'block') {
        if (this.#blocked[rule.list]?.(request.address)) return refusalOf(rule, this.#numbers)
        continue
      }
      const instance =
        rule.per === 'address' ? request.address : keyCounterOf(request.authorization ?? '')
      if (this.#counters.get(rule.name)?.over(instance, at)) return refusalOf(rule, this.#numbers)
    }
    return undefined
  }
}

/** Preflights an address gets at full speed before the pacing starts, at the least. */
export const PREFLIGHT_BURST = 100
/** Wrong keys one address may send in a minute before each further one is answered late. */
export const WRONG_KEYS_BEFORE_DELAY = 30
/** How late: the 401 of a wrong key past that is sent this much later. */
export const WRONG_KEY_DELAY_MS = 1_000
/** Edge refusals an address gets at full speed in a minute before its connections are slowed. */
export const TARPIT_AFTER_REFUSALS = 300
/** How long a slowed connection waits before its next request is read. */
export const TARPIT_MS = 1_000
/** Addresses the delays remember at most; past it the oldest windows go first. */
const DELAY_ADDRESSES = 10_000

/** A count per address over a fixed minute that starts with its first event. */
class MinuteCounts {
  readonly #clock: Clock
  readonly #windows = new Map<string, { startedAt: number; count: number }>()

  constructor(clock: Clock) {
    this.#clock = clock
  }

  add(address: string): number {
    const now = this.#clock()
    const window = this.#windows.get(address)
    if (window && now - window.startedAt < 60_000) {
      window.count += 1
      return window.count
    }
    this.#windows.delete(address)
    for (const [oldest] of this.#windows) {
      if (this.#windows.size < DELAY_ADDRESSES) break
      this.#windows.delete(oldest)
    }
    this.#windows.set(address, { startedAt: now, count: 1 })
    return 1
  }
}

/**
 * Delays the local edge adds to WAF's refusals, so a flood from one address does not take the
 * machine from everyone else (bench/local-flood-bench.ts), and only on what cannot carry a valid
 * key:
 * - a preflight waits while its address sends preflights faster than the preflight ceiling's
 *   average rate (the ceiling spread over its minute: 500/s with the staging numbers), after a
 *   second's worth (at least PREFLIGHT_BURST) at full speed: no browser sends that many;
 * - the 401 of a wrong key is sent WRONG_KEY_DELAY_MS late once its address sent more than
 *   WRONG_KEYS_BEFORE_DELAY wrong keys in its minute (the authorizer ran: a valid key is never
 *   held back, only the answer that says the key is wrong);
 * - past TARPIT_AFTER_REFUSALS edge refusals in a minute, the connection a refused request came
 *   on is read again only TARPIT_MS after its 429.
 */
export class LocalEdgeDelays {
  readonly #clock: Clock
  readonly #preflightRate: number
  readonly #preflightNext = new Map<string, number>()
  readonly #wrongKeys: MinuteCounts
  readonly #refusals: MinuteCounts

  readonly #wrongKeysBeforeDelay: number

  constructor({
    numbers,
    clock,
    wrongKeysBeforeDelay = WRONG_KEYS_BEFORE_DELAY,
  }: {
    numbers: EdgeNumbers
    clock: Clock
    /** Tests that send many wrong keys from one address raise it. */
    wrongKeysBeforeDelay?: number
  }) {
    this.#clock = clock
    this.#wrongKeysBeforeDelay = wrongKeysBeforeDelay
    // Preflights a second: the ceiling spread evenly over its 60-second window.
    this.#preflightRate = Math.max(1, numbers.wafKeyedPerAddressPerMinute / 60)
    this.#wrongKeys = new MinuteCounts(clock)
    this.#refusals = new MinuteCounts(clock)
  }

  /**
   * How long a preflight of `address` waits: a token bucket of #preflightRate a second holding a
   * second's worth (the time its next token is free, kept per address).
   */
  preflightDelayMs(address: string, method: string): number {
    if (method !== PREFLIGHT_METHOD) return 0
    const now = this.#clock()
    const interval = 1_000 / this.#preflightRate
    // A second's worth at full speed, and never fewer than PREFLIGHT_BURST.
    const burst = Math.max(1_000, PREFLIGHT_BURST * interval)
    const next = Math.max(this.#preflightNext.get(address) ?? 0, now - burst) + interval
    this.#preflightNext.delete(address)
    if (this.#preflightNext.size >= DELAY_ADDRESSES) {
      const [oldest] = this.#preflightNext.keys()
      if (oldest !== undefined) this.#preflightNext.delete(oldest)
    }
    this.#preflightNext.set(address, next)
    return Math.max(0, next - now)
  }

  /** Counts a wrong key of `address`; how late its 401 goes out. */
  wrongKeyDelayMs(address: string): number {
    return this.#wrongKeys.add(address) > this.#wrongKeysBeforeDelay ? WRONG_KEY_DELAY_MS : 0
  }

  /** Counts an edge refusal of `address`; whether its connection is slowed after the 429. */
  slowAfterRefusal(address: string): boolean {
    return this.#refusals.add(address) > TARPIT_AFTER_REFUSALS
  }
}
