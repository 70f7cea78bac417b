import { describe, expect, it } from 'vitest'
import {
  keyValuesIn,
  MASKED_KEY_VALUE,
  maskingArguments,
  shownArgument,
} from '#keys/key-value-mask.ts'
import { requestLogLine } from '#local/gateway/request-log.ts'
import { runKeysCommand } from '#ops/keys/keys-command.ts'

/**
 * A key value is never shown and never sent where an id belongs, wherever it sits: inside a run
 * of key characters longer than any key (`/` is a key character, so `<key>/<key>` is one run),
 * or inside a path segment beside other characters.
 */
const KEY = 'Zq8dV2kLp0xYw4rT9sBn3mFh6jCe1uGa'
const JOINED = `${KEY}/${KEY}/${KEY}/${KEY}`

describe('a key inside a run of key characters longer than any key', () => {
  it('is found, shown masked and masked wherever a message repeats it', () => {
    expect(JOINED.length).toBeGreaterThan(128)
    expect(keyValuesIn(JOINED)).toEqual([JOINED])
    expect(keyValuesIn(`--name=${JOINED}`)).toEqual([JOINED])
    expect(shownArgument(JOINED)).toBe(MASKED_KEY_VALUE)
    let written = ''
    const write = maskingArguments(['revoke', JOINED], (text) => (written += text))
    write(`No API key ${JOINED}`)
    expect(written).toBe(`No API key ${MASKED_KEY_VALUE}`)
    expect(written).not.toContain(KEY)
  })

  it('is refused by the keys CLI before anything is sent', async () => {
    let out = ''
    let opened = 0
    const code = await runKeysCommand(
      ['--stage', 'staging', 'show', JOINED],
      { stdout: (text) => (out += text), stderr: (text) => (out += text), env: {} },
      async () => {
        opened += 1
        throw new Error('a stage was opened')
      },
    )
    expect({ code, opened }).toEqual({ code: 2, opened: 0 })
    expect(out).toContain('that looks like a key value')
    expect(out).not.toContain(KEY)
  })

  it('leaves ordinary arguments, ids and short paths alone', () => {
    expect(keyValuesIn('k1a2b3c4d5')).toEqual([])
    expect(keyValuesIn('enterprise-acme')).toEqual([])
    expect(shownArgument('/apikeys/k1a2b3c4d5')).toBe('/apikeys/k1a2b3c4d5')
  })
})

describe('the request log', () => {
  const line = (path: string) =>
    requestLogLine({
      time: new Date(0),
      method: 'GET',
      path,
      status: 404,
      durationMs: 1,
      requestId: 'r',
      keyId: undefined,
    })

  it('masks a key inside a path segment, and keeps the rest of the segment', () => {
    for (const path of [`/v1/pets/${KEY},`, `/v1/pets/x;${KEY}`, `/v1/pets/${KEY}%20`]) {
      const shown = line(path)
      expect(shown, path).not.toContain(KEY)
      expect(shown).toContain(`/v1/pets/`)
      expect(shown).toContain(MASKED_KEY_VALUE)
    }
    expect(line(`/v1/pets/${KEY},`)).toContain(`/v1/pets/${MASKED_KEY_VALUE},`)
    expect(line(`/v1/pets/${'a'.repeat(200)}`)).toContain(`/v1/pets/${MASKED_KEY_VALUE} `)
  })

  it('shows pet ids and route words', () => {
    expect(line('/v1/pets/9223372036854775807')).toContain(' /v1/pets/9223372036854775807 ')
  })
})
