import { type UsagePlanBackstop, usagePlanBackstop } from '#keys/usage-plan-backstop-config.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { Clock } from '#shared/time/clock.ts'

/**
 * API Gateway's usage-plan enforcement per API key, as the deployed backstop does it (AWS docs,
 * "Throttle requests to your REST APIs"): a token bucket (size burstLimit, refilled at rateLimit
 * per second, one token a request) and a DAY quota (UTC day) that counts every request the
 * gateway lets through to the function, including those the function then refuses with 429.
 * AWS applies both "on a best-effort basis"; this model applies them exactly.
 */
export type BackstopVerdict = 'admitted' | 'THROTTLED' | 'QUOTA_EXCEEDED'

export type BackstopFor = (limits: PlanLimits) => UsagePlanBackstop

interface KeyState {
  tokens: number
  refilledAtMs: number
  day: string
  used: number
}

const TOKEN_ROUNDING = 1e-9

/** A usage plan without a throttle or a quota: nothing to refuse. */
const UNTHROTTLED = { rateLimit: Infinity, burstLimit: Infinity, dailyQuota: Infinity } as const

const utcDay = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10)

export class UsagePlanThrottle {
  readonly #clock: Clock
  readonly #backstopFor: BackstopFor
  readonly #keys = new Map<string, KeyState>()

  constructor({
    clock,
    backstopFor = usagePlanBackstop,
  }: { clock: Clock; backstopFor?: BackstopFor }) {
    this.#clock = clock
    this.#backstopFor = backstopFor
  }

  /** Requests of a key admitted this UTC day: what GetUsage reports locally. */
  usedToday(keyDigest: string): number {
    const state = this.#keys.get(keyDigest)
    return state?.day === utcDay(this.#clock()) ? state.used : 0
  }

  /**
   * Takes one request of a key (its usageIdentifierKey's digest) through the backstop of its
   * plan limits, or through a plan with neither throttle nor quota (`limits` undefined: the pool
   * plan, which refuses nothing); counts it only when admitted.
   */
  admit(keyDigest: string, limits: PlanLimits | undefined): BackstopVerdict {
    const { rateLimit, burstLimit, dailyQuota } = limits ? this.#backstopFor(limits) : UNTHROTTLED
    const now = this.#clock()
    const day = utcDay(now)
    let state = this.#keys.get(keyDigest)
    if (!state) {
      // A key's bucket starts full, as for a key just attached to its plan.
      state = { tokens: burstLimit, refilledAtMs: now, day, used: 0 }
      this.#keys.set(keyDigest, state)
    }
    if (state.day !== day) {
      state.day = day
      state.used = 0
    }
    const elapsedSeconds = Math.max(0, now - state.refilledAtMs) / 1000
    state.tokens = Math.min(burstLimit, state.tokens + elapsedSeconds * rateLimit)
    state.refilledAtMs = now
    if (state.used >= dailyQuota) return 'QUOTA_EXCEEDED'
    // Less one part in a billion: rates such as 5000/30 per second are not exact in binary, and a
    // client sending exactly as fast as the bucket refills must not meet a refusal from rounding.
    if (state.tokens < 1 - TOKEN_ROUNDING) return 'THROTTLED'
    state.tokens -= 1
    state.used += 1
    return 'admitted'
  }
}
