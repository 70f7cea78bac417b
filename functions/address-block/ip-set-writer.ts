import { GetIPSetCommand, UpdateIPSetCommand, type WAFV2Client } from '@aws-sdk/client-wafv2'

/**
 * One WAF IP set, made to hold exactly a list of addresses. UpdateIPSet replaces the whole list
 * and takes the lock token of the GetIPSet it was computed from: if the set changed in between
 * (another invocation, an operator), WAF refuses it with WAFOptimisticLockException and the
 * writer reads it again ("UpdateIPSet", AWS WAFV2 API Reference). An IP set holds at most 10,000
 * addresses ("AWS WAF quotas"); WAF allows about one Create, Put or Update call per second per
 * account and Region ("Quotas", Security Automations for AWS WAF), so a set already right costs
 * only the read, and throttled calls are the SDK's to retry.
 */
export const IP_SET_CAPACITY = 10_000

/** `name|id|scope`, as CloudFormation's Ref of an AWS::WAFv2::IPSet reads. */
export interface IpSetRef {
  name: string
  id: string
  scope: 'REGIONAL' | 'CLOUDFRONT'
}

export const parseIpSetRef = (ref: string): IpSetRef => {
  const [name, id, scope] = ref.split('|')
  if (!name || !id || (scope !== 'REGIONAL' && scope !== 'CLOUDFRONT')) {
    throw new Error(`An IP set is "name|id|scope" (REGIONAL or CLOUDFRONT), got "${ref}"`)
  }
  return { name, id, scope }
}

export type IpSetOutcome = 'unchanged' | 'updated'

const LOCK_ATTEMPTS = 5

const sameAddresses = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false
  const set = new Set(a)
  return b.every((address) => set.has(address))
}

export class IpSetWriter {
  readonly #client: WAFV2Client
  readonly #ref: IpSetRef
  readonly #sleep: (ms: number) => Promise<void>

  constructor({
    client,
    ref,
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  }: {
    client: WAFV2Client
    ref: IpSetRef
    sleep?: (ms: number) => Promise<void>
  }) {
    this.#client = client
    this.#ref = ref
    this.#sleep = sleep
  }

  get name(): string {
    return this.#ref.name
  }

  /**
   * Makes the set hold exactly `addresses` (CIDRs). Throws what WAF answers past its retries: a
   * lost race more than LOCK_ATTEMPTS times, throttling the SDK could not outwait, a denied call.
   */
  async ensure(addresses: readonly string[]): Promise<IpSetOutcome> {
    if (addresses.length > IP_SET_CAPACITY) {
      throw new Error(
        `An IP set holds at most ${IP_SET_CAPACITY} addresses, not ${addresses.length}`,
      )
    }
    const key = { Name: this.#ref.name, Id: this.#ref.id, Scope: this.#ref.scope }
    for (let attempt = 1; ; attempt += 1) {
      const { IPSet, LockToken } = await this.#client.send(new GetIPSetCommand(key))
      if (sameAddresses(IPSet?.Addresses ?? [], addresses)) return 'unchanged'
      try {
        await this.#client.send(
          new UpdateIPSetCommand({
            ...key,
            Addresses: [...addresses],
            LockToken,
            // UpdateIPSet replaces every mutable field: the description is sent back as it was.
            ...(IPSet?.Description ? { Description: IPSet.Description } : {}),
          }),
        )
        return 'updated'
      } catch (error) {
        if ((error as Error)?.name !== 'WAFOptimisticLockException' || attempt >= LOCK_ATTEMPTS) {
          throw error
        }
        // Someone else wrote in between: read again after a short, spread-out pause.
        await this.#sleep(100 * attempt + Math.floor(Math.random() * 100))
      }
    }
  }
}
