import { describe, expect, it } from 'vitest'
import { newProjectKey } from '#keys/api-key-value.ts'
import {
  currentMacVersion,
  formatMacSecrets,
  keyRoute,
  parseMacSecrets,
} from '#shared/auth/project-key.ts'
import { TEST_MAC_SECRETS } from '#test/support/test-key-store.ts'

/**
 * The project's keys carry a keyed MAC: the authorizer tells a genuine one from a forgery without
 * reading anything, and a key's marker says which table holds it.
 */
const ROTATED = new Map([
  [1, TEST_MAC_SECRETS.get(1) as string],
  [2, 'test-mac-secret-version-2-fedcba9876543210'],
])

describe('project keys and their MAC', () => {
  it('routes a store key to its id and a gateway key to the mirror, once the MAC verifies', () => {
    const store = newProjectKey('store', TEST_MAC_SECRETS)
    expect(keyRoute(store.value, TEST_MAC_SECRETS)).toEqual({
      kind: 'store',
      version: 1,
      keyId: store.keyId,
    })
    const gateway = newProjectKey('gateway', TEST_MAC_SECRETS)
    expect(gateway.keyId).toBeUndefined()
    expect(keyRoute(gateway.value, TEST_MAC_SECRETS)).toEqual({ kind: 'gateway', version: 1 })
  })

  it('sends every value of no project shape to the read, as a console key', () => {
    for (const value of [
      'a'.repeat(40),
      'free-Q1xWabcdefghijklmnopqrstuvwxyz0123',
      'pkg1-not-the-marker-0123456789abcdef',
      'PKS1_upper_case_is_not_the_marker_000',
    ]) {
      expect(keyRoute(value, TEST_MAC_SECRETS)).toEqual({ kind: 'console' })
    }
  })

  it('refuses any change to a project key: each character of the body and of the MAC', () => {
    const { value } = newProjectKey('store', TEST_MAC_SECRETS)
    const other = (character: string) => (character === 'a' ? 'b' : 'a')
    for (let at = 5; at < value.length; at += 1) {
      if (value[at] === '_') continue
      const changed = `${value.slice(0, at)}${other(value[at] as string)}${value.slice(at + 1)}`
      expect(keyRoute(changed, TEST_MAC_SECRETS), `character ${at}`).toBeUndefined()
    }
    // A gateway MAC on a store body, a store key's parts on a gateway marker: refused.
    expect(keyRoute(value.replace(/^pks/, 'pkg'), TEST_MAC_SECRETS)).toBeUndefined()
  })

  it('refuses a key made with another secret, or with a version the stage no longer holds', () => {
    const stranger = newProjectKey('store', new Map([[1, 'x'.repeat(40)]])).value
    expect(keyRoute(stranger, TEST_MAC_SECRETS)).toBeUndefined()
    const newer = newProjectKey('store', ROTATED).value
    expect(newer.startsWith('pks2_')).toBe(true)
    expect(keyRoute(newer, TEST_MAC_SECRETS)).toBeUndefined()
  })

  it('rotates: new keys take the highest version, older keys keep working while their version is held', () => {
    const old = newProjectKey('gateway', TEST_MAC_SECRETS).value
    const newer = newProjectKey('gateway', ROTATED).value
    expect(keyRoute(old, ROTATED)).toEqual({ kind: 'gateway', version: 1 })
    expect(keyRoute(newer, ROTATED)).toEqual({ kind: 'gateway', version: 2 })
    // Version 1 retired: its keys are forgeries now, refused before any read.
    const retired = new Map([[2, ROTATED.get(2) as string]])
    expect(keyRoute(old, retired)).toBeUndefined()
    expect(currentMacVersion(ROTATED)).toBe(2)
  })

  it('reads KEY_MAC_SECRETS as the CDK and the local server write it, and nothing else', () => {
    expect(parseMacSecrets(formatMacSecrets(ROTATED))).toEqual(ROTATED)
    for (const text of [undefined, '', '1:short', `x:${'s'.repeat(40)}`, `1:${'s'.repeat(40)},2`]) {
      expect(() => parseMacSecrets(text)).toThrow(/KEY_MAC_SECRETS/)
    }
  })
})
