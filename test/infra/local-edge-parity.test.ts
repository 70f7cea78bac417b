import { describe, expect, it } from 'vitest'
import { LocalEdge, localEdgeNumbers } from '#local/edge/local-edge.ts'
import type { EdgeNumbers } from '#shared/edge/edge-rules-config.ts'
import { appStage, type CfnResource, propsOf, resourcesOf } from './support/synth-app.ts'
import { type WafRequest, webAclEvaluator } from './support/web-acl-evaluator.ts'

/**
 * The local edge (local/edge/local-edge.ts) against the staging web ACL it stands in for,
 * request by request: the same rule refuses the same request, or both let it through. The local
 * server follows staging's template (localEdgeNumbers). Times lie on a 1/1024 s grid, so both
 * sides compute their windows without rounding (seconds for WAF, milliseconds locally).
 */
const staging = appStage('staging').api
const [[, acl]] = resourcesOf(staging, 'AWS::WAFv2::WebACL') as [[string, CfnResource]]
const resources = staging.toJSON().Resources as Record<string, CfnResource>
const VALID = `Bearer ${'k'.repeat(40)}`
const forged = (n: number) => `Bearer forged${n.toString(36).padStart(34, '0')}`

/** Both verdicts on a stream, in order: the refusing rule's name, or `-`. */
const verdicts = (
  stream: WafRequest[],
  {
    rules = acl,
    sets = resources,
    numbers = localEdgeNumbers(),
    blocked = {},
  }: {
    rules?: CfnResource
    sets?: Record<string, CfnResource>
    numbers?: EdgeNumbers
    blocked?: ConstructorParameters<typeof LocalEdge>[0]['blocked']
  } = {},
) => {
  let nowMs = 0
  const local = new LocalEdge({ numbers, clock: () => nowMs, blocked })
  const waf = webAclEvaluator(rules, sets)
  const wafSaid: string[] = []
  const localSaid: string[] = []
  for (const request of stream) {
    nowMs = request.at * 1_000
    wafSaid.push(waf(request).blockedBy ?? '-')
    localSaid.push(
      local.evaluate({
        address: request.ip,
        method: request.method,
        authorization: request.authorization,
      })?.rule ?? '-',
    )
  }
  return { wafSaid, localSaid }
}

/** `count` requests from `from` on, `perSecond` of them a second (a power of two), made by `make`. */
const every = (
  count: number,
  perSecond: number,
  make: (i: number) => Omit<WafRequest, 'at'>,
  from = 0,
): WafRequest[] =>
  Array.from({ length: count }, (_, i) => ({ at: from + i / perSecond, ...make(i) }))

const merged = (...streams: WafRequest[][]) => streams.flat().sort((a, b) => a.at - b.at)

describe('the local edge and the web ACL it stands in for', () => {
  it('agree on the issue’s case: 40 wrong keys and 40 without a key, then a new valid key, from one address', () => {
    const ip = '127.0.0.1'
    const stream = merged(
      every(40, 64, (i) => ({ ip, method: 'GET', authorization: forged(i) })),
      every(40, 64, () => ({ ip, method: 'GET' }), 1),
      every(1, 1, () => ({ ip, method: 'GET', authorization: VALID }), 2),
    )
    const { wafSaid, localSaid } = verdicts(stream)
    expect(localSaid).toEqual(wafSaid)
    expect(new Set(wafSaid)).toEqual(new Set(['-']))
  })

  it('agree request by request on floods that cross the ceilings: without a key (the template’s 1,500 in 5 minutes), forged keys and preflights (their ceiling lowered on both sides), a neighbour’s valid key', () => {
    // The keyed ceiling lowered to 1,024 a minute in the web ACL and in the local numbers alike.
    const ceiling = 1_024
    const numbers = { ...localEdgeNumbers(), wafKeyedPerAddressPerMinute: ceiling }
    const rules = {
      ...acl,
      Properties: {
        ...propsOf(acl),
        Rules: (
          propsOf(acl).Rules as { Name: string; Statement: { RateBasedStatement?: object } }[]
        ).map((rule) =>
          ['KeyedPerAddress', 'PreflightPerAddress'].includes(rule.Name)
            ? {
                ...rule,
                Statement: {
                  RateBasedStatement: { ...rule.Statement.RateBasedStatement, Limit: ceiling },
                },
              }
            : rule,
        ),
      },
    }
    const stream = merged(
      // 2,048 without a key in 256 s: past 1,500 in 5 minutes.
      every(2_048, 8, () => ({ ip: '198.51.100.1', method: 'GET' })),
      // Preflights and forged keys at 64 a second for 32 s: past the ceiling in a minute each.
      every(2_048, 64, () => ({ ip: '198.51.100.2', method: 'OPTIONS' })),
      every(2_048, 64, (i) => ({ ip: '198.51.100.3', method: 'GET', authorization: forged(i) })),
      // The same address's browser: a preflight and a keyed request, 4 a second.
      every(512, 4, (i) => ({
        ip: '198.51.100.3',
        method: i % 2 ? 'OPTIONS' : 'GET',
        ...(i % 2 ? {} : { authorization: VALID }),
      })),
    )
    const { wafSaid, localSaid } = verdicts(stream, { rules, numbers })
    expect(localSaid).toEqual(wafSaid)
    expect(new Set(wafSaid)).toEqual(
      new Set(['-', 'KeylessPerAddress', 'PreflightPerAddress', 'KeyedPerAddress']),
    )
  })

  it('agree on the per-key rule, whichever addresses send the key, with its limit lowered on both sides', () => {
    // 2 x 5 x largestPlanPerMinute per 5 minutes: 1,000 with a largest plan of 100.
    const numbers = { ...localEdgeNumbers(), largestPlanPerMinute: 100 }
    const rules = {
      ...acl,
      Properties: {
        ...propsOf(acl),
        Rules: (
          propsOf(acl).Rules as { Name: string; Statement: { RateBasedStatement?: object } }[]
        ).map((rule) =>
          rule.Name === 'RatePerKey'
            ? {
                ...rule,
                Statement: {
                  RateBasedStatement: { ...rule.Statement.RateBasedStatement, Limit: 1_000 },
                },
              }
            : rule,
        ),
      },
    }
    const stream = every(2_048, 8, (i) => ({
      ip: `10.0.0.${i % 5}`,
      method: 'GET',
      authorization: i % 3 ? VALID : `bearer   ${'k'.repeat(40)}`,
    }))
    const { wafSaid, localSaid } = verdicts(stream, { rules, numbers })
    expect(localSaid).toEqual(wafSaid)
    expect(wafSaid.indexOf('RatePerKey')).toBe(1_000)
  })

  it('agree on the block lists: the operator’s and the automatic one refuse every request of their addresses', () => {
    const sets = structuredClone(resources)
    const listOf = (suffix: string) =>
      Object.values(sets).find((resource) =>
        String(propsOf(resource).Name).endsWith(suffix),
      ) as CfnResource
    ;(listOf('-blocked-addresses').Properties as { Addresses: string[] }).Addresses = [
      '192.0.2.0/24',
    ]
    ;(listOf('-auto-blocked-ipv4').Properties as { Addresses: string[] }).Addresses = [
      '198.51.100.9/32',
    ]
    ;(listOf('-auto-blocked-ipv6').Properties as { Addresses: string[] }).Addresses = [
      '2001:db8::9/128',
    ]
    const stream = ['192.0.2.7', '198.51.100.9', '2001:db8::9', '198.51.100.10'].flatMap((ip) =>
      ['GET', 'OPTIONS'].map((method) => ({ at: 1, ip, method, authorization: VALID })),
    )
    const { wafSaid, localSaid } = verdicts(stream, {
      sets,
      blocked: {
        operator: (address) => address.startsWith('192.0.2.'),
        automatic: (address) => ['198.51.100.9', '2001:db8::9'].includes(address),
      },
    })
    expect(localSaid).toEqual(wafSaid)
    expect(wafSaid).toEqual([
      'BlockedAddresses',
      'BlockedAddresses',
      'AutoBlockedAddresses',
      'AutoBlockedAddresses',
      'AutoBlockedAddresses',
      'AutoBlockedAddresses',
      '-',
      '-',
    ])
  })
})
