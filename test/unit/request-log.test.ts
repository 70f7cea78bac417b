import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import {
  noteKeyId,
  type RequestLogEntry,
  requestLogLine,
  terminalSafe,
  withRequestLog,
} from '#local/gateway/request-log.ts'

/**
 * `npm start`'s request log writes nothing a terminal acts on: a request target, a method or an id
 * with control characters in it is written escaped, in printable ASCII, on both paths that write a
 * line (the gateway's answers, withRequestLog, and the 400 to a request Node refused, which
 * local/gateway/client-error.ts logs through requestLogLine; over HTTP in
 * test/e2e/local-request-log.test.ts).
 */

/** One or more samples of every class the log must escape, as text and as its escaped form. */
const CLASSES: { name: string; samples: [text: string, shown: string][] }[] = [
  {
    name: 'C0 controls',
    samples: [
      ['\u0000', '\\x00'],
      ['\u0007', '\\x07'],
      ['\u0008', '\\x08'],
      ['\t', '\\t'],
      ['\n', '\\n'],
      ['\r', '\\r'],
      ['\u001b[2K', '\\x1b[2K'],
      ['\u001b]52;c;SGVsbG8=\u0007', '\\x1b]52;c;SGVsbG8=\\x07'],
      ['\u001f', '\\x1f'],
    ],
  },
  { name: 'DEL', samples: [['\u007f', '\\x7f']] },
  {
    name: 'C1 controls',
    samples: [
      ['\u0080', '\\x80'],
      ['\u0085', '\\x85'],
      ['\u009b2J', '\\x9b2J'],
      ['\u009d0;title\u009c', '\\x9d0;title\\x9c'],
      ['\u009f', '\\x9f'],
    ],
  },
  {
    name: 'bidi controls',
    samples: [
      ['\u202a', '\\u202a'],
      ['\u202b', '\\u202b'],
      ['\u202c', '\\u202c'],
      ['\u202d', '\\u202d'],
      ['\u202e', '\\u202e'],
      ['\u2066', '\\u2066'],
      ['\u2067', '\\u2067'],
      ['\u2068', '\\u2068'],
      ['\u2069', '\\u2069'],
    ],
  },
  {
    name: 'line and paragraph separators',
    samples: [
      ['\u2028', '\\u2028'],
      ['\u2029', '\\u2029'],
    ],
  },
]

/** The UTF-8 bytes of `text` as Node hands a request target over: one character per byte. */
const asReceived = (text: string) => Buffer.from(text, 'utf8').toString('latin1')

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

const line = (fields: Partial<RequestLogEntry>) =>
  requestLogLine({
    time: new Date(0),
    method: 'GET',
    path: '/v1/pets',
    status: 400,
    durationMs: 0,
    requestId: 'r',
    keyId: undefined,
    ...fields,
  })

describe('terminalSafe', () => {
  it.each(CLASSES)('escapes the $name', ({ samples }) => {
    for (const [text, shown] of samples) {
      expect(terminalSafe(`a${text}b`)).toBe(`a${shown}b`)
    }
  })

  it.each(CLASSES)('escapes the bytes of the $name as they arrive off the wire', ({ samples }) => {
    for (const [text] of samples) {
      const bytes = Buffer.from(text, 'utf8')
      const shown = terminalSafe(asReceived(text))
      expect(shown).toMatch(PRINTABLE_ASCII)
      // Every byte outside printable ASCII is named by its value.
      for (const byte of bytes.filter((value) => value < 0x20 || value > 0x7e)) {
        expect(shown).toMatch(new RegExp(`\\\\(x${byte.toString(16).padStart(2, '0')}|[tnr])`))
      }
    }
    expect(terminalSafe(asReceived('\u202e'))).toBe('\\xe2\\x80\\xae')
    expect(terminalSafe(asReceived('\u2028'))).toBe('\\xe2\\x80\\xa8')
  })

  it('keeps printable ASCII, doubles a backslash, so an escape cannot be forged', () => {
    expect(terminalSafe('/v1/pets/1?x=%1B~')).toBe('/v1/pets/1?x=%1B~')
    expect(terminalSafe('\\x1b')).toBe('\\\\x1b')
    expect(terminalSafe('\\x1b')).not.toBe(terminalSafe('\u001b'))
  })
})

describe('a request-log line', () => {
  it.each(CLASSES)('carries no $name in any field, as text or as bytes', ({ samples }) => {
    for (const [text, shown] of samples) {
      for (const value of [text, asReceived(text)]) {
        const written = line({
          method: `GET${value}`,
          path: `/v1/pets/${value}`,
          requestId: `r${value}`,
          keyId: `k${value}`,
        })
        expect(written).toMatch(PRINTABLE_ASCII)
      }
      expect(line({ path: `/v1/pets/${text}` })).toContain(`/v1/pets/${shown} 400`)
    }
  })
})

/** What withRequestLog reads of a request and its response, as Node's objects have it. */
const exchange = (method: string, url: string) => {
  const req = Object.assign(new EventEmitter(), { method, url }) as unknown as IncomingMessage
  const headers: Record<string, string> = {}
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    getHeader: (name: string) => headers[name],
    setHeader: (name: string, value: string) => {
      headers[name] = value
    },
  }) as unknown as ServerResponse
  return { req, res }
}

describe('the log of answered requests (withRequestLog)', () => {
  it.each(CLASSES)('writes the $name of a request escaped', ({ samples }) => {
    for (const [text, shown] of samples) {
      const lines: string[] = []
      const { req, res } = exchange('GET', `/v1/pets/${asReceived(text)}x?q=${text}`)
      const listener = withRequestLog(
        (_req, answer) => {
          answer.setHeader('x-amzn-RequestId', `id${text}`)
          noteKeyId(answer, `k${text}`)
          answer.emit('finish')
        },
        (written) => lines.push(written),
        () => 0,
      )
      listener(req, res)
      expect(lines).toHaveLength(1)
      const [written] = lines as [string]
      expect(written).toMatch(PRINTABLE_ASCII)
      expect(written).toContain(` GET /v1/pets/${terminalSafe(asReceived(text))}x 200 `)
      expect(written).toContain(` id=id${shown} key=k${shown}`)
      // The query string is the client's data: never logged, escaped or not.
      expect(written).not.toContain('q=')
    }
  })
})
