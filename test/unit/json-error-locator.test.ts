import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { locateJsonError } from '#local/control-plane/json-error-locator.ts'

describe('JSON error locator', () => {
  it('finds an error exactly where JSON.parse does, and none in JSON', () => {
    // JSON texts, and the same texts with one character dropped, doubled or replaced.
    const mutated = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom('', '"', ',', '}', ']', ':', '\\', '\n', 'x'))
      .map(([json, at, char]) => {
        const i = json.length === 0 ? 0 : at % json.length
        return json.slice(0, i) + char + json.slice(i + (char === '' ? 1 : 0))
      })
    fc.assert(
      fc.property(fc.oneof(fc.json(), mutated), (text) => {
        let parses = true
        try {
          JSON.parse(text)
        } catch {
          parses = false
        }
        expect(locateJsonError(text) === undefined).toBe(parses)
      }),
      { numRuns: 2_000 },
    )
  })

  it('counts lines and columns from 1', () => {
    expect(locateJsonError('{\n  "a": 1\n  "b": 2\n}')).toEqual({
      line: 3,
      column: 3,
      problem: "expected ',' or '}'",
    })
  })
})
