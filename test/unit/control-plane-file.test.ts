import { describe, expect, it } from 'vitest'
import {
  ControlPlaneFileError,
  parseControlPlaneFile,
} from '#local/control-plane/control-plane-store.ts'

/**
 * The local control plane's file as `npm start` reads it: one it cannot use is named with where
 * it goes wrong, never with what it holds (any part of it may be a key value).
 */
const FILE = '.petstore/control-plane.json'
const GOOD = 'GOODvalue0123456789abcdefghij'
const OTHER = 'OTHERvalue0123456789abcdefghi'

const piecesOf = (...keys: string[]) =>
  keys.flatMap((key) => Array.from({ length: key.length - 5 }, (_, i) => key.slice(i, i + 6)))

const key = (id: string, value: unknown) => ({
  id,
  name: id,
  value,
  enabled: true,
  createdDate: 1,
  lastUpdatedDate: 1,
  tags: {},
})
const state = (...apiKeys: object[]) => ({ version: 1, apiKeys, usagePlans: [], usagePlanKeys: [] })

const refusal = (text: string): string => {
  try {
    parseControlPlaneFile(text, FILE)
  } catch (error) {
    expect(error).toBeInstanceOf(ControlPlaneFileError)
    return (error as Error).message
  }
  throw new Error('the file was accepted')
}

describe('local control-plane file', () => {
  it('reads what the server writes', () => {
    const written = state(key('k1', GOOD))
    expect(parseControlPlaneFile(JSON.stringify(written, null, 2), FILE)).toEqual(written)
  })

  it('is refused by line and column when it is not JSON, without echoing a key', () => {
    const text = JSON.stringify(state(key('k1', GOOD), key('k2', OTHER)), null, 2).replace(
      `"${OTHER}"`,
      `"${OTHER}`,
    )
    const message = refusal(text)
    expect(message).toMatch(
      /^\.petstore\/control-plane\.json is not valid JSON: .* at line \d+, column \d+$/,
    )
    for (const piece of piecesOf(GOOD, OTHER)) expect(message).not.toContain(piece)
  })

  it.each([
    [
      'a key value cut short',
      state(key('k1', GOOD), key('k2', OTHER.slice(0, 12))),
      'apiKeys[1].value',
    ],
    ['a key value that is a number', state(key('k1', 1234567890123456)), 'apiKeys[0].value'],
    ['a key without enabled', state({ ...key('k1', GOOD), enabled: 'yes' }), 'apiKeys[0].enabled'],
    [
      'a plan with a bad quota period',
      {
        ...state(),
        usagePlans: [
          {
            id: 'p1',
            name: 'p',
            apiStages: [],
            quota: { limit: 1, offset: 0, period: OTHER },
            tags: {},
          },
        ],
      },
      'usagePlans[0].quota.period',
    ],
  ])('with %s is refused by the path of the field', (_, content, path) => {
    const message = refusal(JSON.stringify(content))
    expect(message).toBe(`${FILE}: ${path} is missing or not valid`)
    for (const piece of piecesOf(GOOD, OTHER)) expect(message).not.toContain(piece)
  })

  it('is refused when it is no control-plane state at all', () => {
    expect(refusal(JSON.stringify({ keys: [] }))).toBe(`${FILE}: version is missing or not valid`)
    expect(refusal('[]')).toBe(
      `${FILE} must hold a JSON object with "version": 1, "apiKeys", "usagePlans" and "usagePlanKeys"`,
    )
  })
})
