import { describe, expect, it } from 'vitest'
import { LocalWaf, WafApiError } from '#local/edge/local-waf.ts'

const TARGET = 'AWSWAF_20190729.'

describe('the local WAF’s IP sets', () => {
  const setUp = () => {
    const waf = new LocalWaf()
    const ref = waf.createIpSet('blocked', 'IPV4', 'a list')
    const [name, id] = ref.split('|')
    const key = { Name: name, Id: id, Scope: 'REGIONAL' }
    const get = () =>
      waf.call(`${TARGET}GetIPSet`, key) as {
        IPSet: { Addresses: string[]; IPAddressVersion: string }
        LockToken: string
      }
    const update = (Addresses: unknown, LockToken: string) =>
      waf.call(`${TARGET}UpdateIPSet`, { ...key, Addresses, LockToken })
    return { waf, ref, get, update }
  }

  it('takes an update only with the lock token of the set as it is, and hands out the next one', () => {
    const { waf, ref, get, update } = setUp()
    const { LockToken } = get()
    const { NextLockToken } = update(['198.51.100.0/24'], LockToken) as { NextLockToken: string }
    expect(get()).toMatchObject({
      IPSet: { Addresses: ['198.51.100.0/24'] },
      LockToken: NextLockToken,
    })
    expect(waf.contains([ref], '198.51.100.7')).toBe(true)
    expect(waf.contains([ref], '198.51.101.7')).toBe(false)
    expect(() => update([], LockToken)).toThrow(
      expect.objectContaining({ type: 'WAFOptimisticLockException', status: 400 }),
    )
    expect(get().IPSet.Addresses).toEqual(['198.51.100.0/24'])
  })

  it('refuses what WAF refuses: another version’s or a bare address, more than 10,000, an unknown set or operation', () => {
    const { get, update, waf } = setUp()
    const token = get().LockToken
    for (const addresses of [['2001:db8::1/128'], ['198.51.100.7'], 'x']) {
      expect(() => update(addresses, token)).toThrow(
        expect.objectContaining({ type: 'WAFInvalidParameterException' }),
      )
    }
    expect(() =>
      update(
        Array.from({ length: 10_001 }, (_, i) => `10.0.${i >> 8}.${i & 255}/32`),
        token,
      ),
    ).toThrow(expect.objectContaining({ type: 'WAFLimitsExceededException' }))
    expect(() =>
      waf.call(`${TARGET}GetIPSet`, { Name: 'other', Id: 'nope', Scope: 'REGIONAL' }),
    ).toThrow(expect.objectContaining({ type: 'WAFNonexistentItemException' }))
    expect(() => waf.call(`${TARGET}ListIPSets`, {})).toThrow(WafApiError)
  })
})
