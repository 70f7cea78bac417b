import { randomUUID } from 'node:crypto'
import { addressMatcher } from '#functions/address-block/address-block-run.ts'

/**
 * The part of AWS WAF's API the automatic block uses, locally: the stage's IP sets with their
 * lock tokens, GetIPSet and UpdateIPSet as WAFV2's JSON protocol carries them (`POST` with
 * `X-Amz-Target: AWSWAF_20190729.<operation>`), so the address-block function's WAFV2Client runs
 * unchanged against the local server (`AWS_ENDPOINT_URL_WAFV2`, docs/local-server.md). It keeps
 * WAF's rules where the function meets them: an update must carry the lock token of the set as
 * it is now (else WAFOptimisticLockException, "UpdateIPSet", AWS WAFV2 API Reference), replaces
 * the whole list, holds at most 10,000 addresses of the set's IP version, each in CIDR notation.
 * The local edge reads the sets directly: a block is in force on the next request.
 */
export const WAF_API_PATH = '/_local/wafv2'
const TARGET_PREFIX = 'AWSWAF_20190729.'
const CAPACITY = 10_000

export interface LocalIpSet {
  name: string
  id: string
  version: 'IPV4' | 'IPV6'
  description: string
  addresses: string[]
  lockToken: string
  /** Whether an address is in the set, rebuilt on every update. */
  contains: (address: string) => boolean
}

/** A refusal as WAF answers it: its exception name (`__type`) and message, with a status. */
export class WafApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message)
    this.name = type
  }
}

const invalid = (message: string) => new WafApiError(400, 'WAFInvalidParameterException', message)

const CIDR = {
  IPV4: /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}\/(3[0-2]|[12]?\d)$/,
  IPV6: /^[0-9a-f:]+:[0-9a-f:]*\/(12[0-8]|1[01]\d|[1-9]?\d)$/i,
} as const

export class LocalWaf {
  readonly #sets = new Map<string, LocalIpSet>()

  /** Makes an IP set (CloudFormation's part on AWS); its `name|id|scope` is what Ref reads. */
  createIpSet(name: string, version: LocalIpSet['version'], description = ''): string {
    const id = randomUUID()
    this.#sets.set(id, {
      name,
      id,
      version,
      description,
      addresses: [],
      lockToken: randomUUID(),
      contains: () => false,
    })
    return `${name}|${id}|REGIONAL`
  }

  /** Whether `address` is in any of the sets named. */
  contains(refs: readonly string[], address: string): boolean {
    return refs.some((ref) => this.#byRef(ref)?.contains(address) ?? false)
  }

  /** The addresses of a set, by its `name|id|scope`. */
  addresses(ref: string): string[] {
    return [...(this.#byRef(ref)?.addresses ?? [])]
  }

  #byRef(ref: string): LocalIpSet | undefined {
    return this.#sets.get(ref.split('|')[1] ?? '')
  }

  #find(body: Record<string, unknown>): LocalIpSet {
    if (body.Scope !== 'REGIONAL') throw invalid('Scope: the local stage is REGIONAL')
    const set = this.#sets.get(String(body.Id))
    if (!set || set.name !== body.Name) {
      throw new WafApiError(400, 'WAFNonexistentItemException', 'No IP set with that name and id')
    }
    return set
  }

  /** One call of the JSON protocol: the operation named by X-Amz-Target, with its body. */
  call(target: string | undefined, body: Record<string, unknown>): Record<string, unknown> {
    const operation = target?.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : ''
    if (operation === 'GetIPSet') {
      const set = this.#find(body)
      return {
        IPSet: {
          Name: set.name,
          Id: set.id,
          ARN: `arn:aws:wafv2:local:000000000000:regional/ipset/${set.name}/${set.id}`,
          Description: set.description,
          IPAddressVersion: set.version,
          Addresses: [...set.addresses],
        },
        LockToken: set.lockToken,
      }
    }
    if (operation === 'UpdateIPSet') {
      const set = this.#find(body)
      const addresses = body.Addresses
      if (!Array.isArray(addresses) || !addresses.every((a) => typeof a === 'string')) {
        throw invalid('Addresses: a list of CIDR strings')
      }
      if (addresses.length > CAPACITY) {
        throw new WafApiError(400, 'WAFLimitsExceededException', `At most ${CAPACITY} addresses`)
      }
      const wrong = addresses.find((address) => !CIDR[set.version].test(address))
      if (wrong !== undefined) throw invalid(`Addresses: ${wrong} is not an ${set.version} CIDR`)
      if (body.LockToken !== set.lockToken) {
        throw new WafApiError(
          400,
          'WAFOptimisticLockException',
          'The IP set changed since you read it: get it again and use its new LockToken',
        )
      }
      set.addresses = [...new Set(addresses)]
      set.description = typeof body.Description === 'string' ? body.Description : ''
      set.contains = addressMatcher(set.addresses)
      set.lockToken = randomUUID()
      return { NextLockToken: set.lockToken }
    }
    throw new WafApiError(400, 'UnknownOperationException', `Not served locally: ${operation}`)
  }
}
