import { describe, expect, it } from 'vitest'
import { LocalKeyFileError, parseKeyFile } from '#local/control-plane/legacy-key-file.ts'

/**
 * The local key file as `npm start` and `npm run keys` read it: a file that cannot be used is
 * named with where it goes wrong, and nothing it holds, since any part of it may be a key.
 */
const FILE = '.petstore/api-keys.json'
const GOOD = 'pro-GOODsecret0123456789abcdef'
const BROKEN = 'free-BROKENsecret0123456789abcd'
const CREATED = '2026-11-22T12:00:00.000Z'

/** Every 6-character piece of every key in the file: none may appear in a message. */
const piecesOf = (...keys: string[]) =>
  keys.flatMap((key) => Array.from({ length: key.length - 5 }, (_, i) => key.slice(i, i + 6)))

const refusal = (text: string): string => {
  try {
    parseKeyFile(text, FILE)
  } catch (error) {
    expect(error).toBeInstanceOf(LocalKeyFileError)
    return (error as Error).message
  }
  throw new Error('the file was accepted')
}

const goodEntry = `{ "key": "${GOOD}", "plan": "pro", "createdAt": "${CREATED}" }`

describe('local key file', () => {
  it('reads the entries `npm run keys` writes', () => {
    const text = JSON.stringify({
      keys: [
        { key: GOOD, plan: 'pro', createdAt: CREATED },
        { key: BROKEN, plan: 'free', createdAt: CREATED, revokedAt: CREATED },
      ],
    })
    expect(parseKeyFile(text, FILE)).toEqual([
      { key: GOOD, plan: 'pro', createdAt: CREATED },
      { key: BROKEN, plan: 'free', createdAt: CREATED, revokedAt: CREATED },
    ])
  })

  it.each([
    [
      'a key value missing its closing quote',
      `{ "keys": [\n  ${goodEntry},\n  { "key": "${BROKEN}, "plan": "free", "createdAt": "${CREATED}" }\n] }`,
      "expected ',' or '}' at line 3, column 47",
    ],
    [
      'a key value without quotes',
      `{ "keys": [\n  { "key": ${BROKEN}, "plan": "free", "createdAt": "${CREATED}" }\n] }`,
      'unexpected character at line 2, column 12',
    ],
    [
      'the closing brace missing',
      `{ "keys": [\n  ${goodEntry},\n  { "key": "${BROKEN}", "plan": "free", "createdAt": "${CREATED}"\n]`,
      "expected ',' or '}' at line 4, column 1",
    ],
    ['a trailing comma', `{ "keys": [${goodEntry},] }`, 'unexpected character at line 1, column'],
    ['a cut-short file', `{ "keys": [{ "key": "${BROKEN}`, 'the text ends too early at line 1'],
    ['an empty file', '', 'the text ends too early at line 1, column 1'],
  ])('with %s is refused by line and column, without echoing a key', (_, text, where) => {
    const message = refusal(text)
    expect(message).toContain(`${FILE} is not valid JSON: ${where}`)
    for (const piece of piecesOf(GOOD, BROKEN)) expect(message).not.toContain(piece)
  })

  it.each([
    ['a list', `[${goodEntry}]`],
    ['an object without keys', `{ "key": "${BROKEN}" }`],
    ['keys that are not a list', `{ "keys": { "key": "${BROKEN}" } }`],
    ['null', 'null'],
  ])('holding %s is refused as not a key file', (_, text) => {
    const message = refusal(text)
    expect(message).toBe(`${FILE} must hold a JSON object with a "keys" list`)
  })

  it.each([
    ['a key too short', `{ "key": "${BROKEN.slice(0, 12)}", "plan": "free" }`, '"key"'],
    ['a character keys never have', `{ "key": "${BROKEN}!", "plan": "free" }`, '"key"'],
    ['a key that is not a string', '{ "key": 1234567890123456789012, "plan": "free" }', '"key"'],
    ['no key', '{ "plan": "free" }', '"key"'],
    // The plan is never echoed either: a hand-edited file may have the two swapped.
    ['the key as its plan', `{ "key": "${GOOD}x", "plan": "${BROKEN}" }`, '"plan"'],
    ['no createdAt', `{ "key": "${BROKEN}", "plan": "free" }`, '"createdAt"'],
    [
      'a revokedAt that is not a string',
      `{ "key": "${BROKEN}", "plan": "free", "createdAt": "${CREATED}", "revokedAt": true }`,
      '"revokedAt"',
    ],
    ['no object', `"${BROKEN}"`, 'is not an object'],
  ])('with an entry with %s is refused by entry number and field', (_, entry, field) => {
    const message = refusal(`{ "keys": [${goodEntry}, ${entry}] }`)
    expect(message).toMatch(new RegExp(`^${FILE.replaceAll('.', '\\.')}: entry 2 `))
    expect(message).toContain(field)
    for (const piece of piecesOf(GOOD, BROKEN)) expect(message).not.toContain(piece)
  })
})
