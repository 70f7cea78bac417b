import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { maskedKeyRuns } from '#keys/key-value-mask.ts'
import { LOCAL_CONTROL_PREFIX } from '#keys/local-control-config.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'

/**
 * One line per request in `npm start`'s terminal, written when the answer is sent:
 *
 *   2025-06-01T12:00:00.000Z GET /v1/pets 200 12ms id=3f0c… key=k1a2b3c4d5
 *
 * time (the request's arrival), method, path (no query string: it is the client's data), status,
 * duration, the request id the answer carries as `x-amzn-RequestId` (on AWS the same id is in the
 * access log and the function's log lines), and the key's id once the authorizer knew it (`-`
 * before). Never a key value: any part of a path segment shaped like one is masked. Requests to the control
 * plane (`/_local/`) are not logged. Never a byte the terminal would act on: every field is written
 * in printable ASCII (terminalSafe), whichever path wrote the line (an answer of the gateway, or
 * client-error.ts's 400 to a request Node refused).
 */
export type RequestLogWriter = (line: string) => void

const keyIds = new WeakMap<ServerResponse, string>()

/** The gateway names the key of a request once it is authorized (LocalGatewayOptions.onAuthorized). */
export const noteKeyId = (res: ServerResponse, keyId: string): void => {
  keyIds.set(res, keyId)
}

export interface RequestLogEntry {
  time: Date
  method: string
  path: string
  status: number
  durationMs: number
  requestId: string | undefined
  keyId: string | undefined
}

/** Runs of key characters inside one path segment (a segment ends at `/`). */
const SEGMENT_RUN = /[A-Za-z0-9._~+-]+=*/g

/**
 * The path with every part of a segment that could hold a key value masked, wherever it sits in
 * the segment (GET /v1/pets/<a key> and /v1/pets/<a key>, are 404s): pet ids (at most 19
 * digits) and route words stay readable.
 */
const shownPath = (path: string): string =>
  path
    .split('/')
    .map((segment) => maskedKeyRuns(segment, SEGMENT_RUN))
    .join('/')

const NAMED_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
}

/**
 * `text` in printable ASCII (0x20 to 0x7E), everything else escaped: `\t`, `\n`, `\r`, a
 * character up to 0xFF as `\xNN`, any other as `\uNNNN`, a backslash doubled. A request target
 * reaches the log as Node decodes it, one character per byte (latin1), so a byte is shown as the
 * byte it was: C0 controls and DEL (ESC starts CSI and OSC sequences: erase a line, forge one,
 * set the clipboard with OSC 52), C1 controls (0x9B is a one-byte CSI), and the UTF-8 bytes of the
 * bidi controls (U+202A to U+202E, U+2066 to U+2069) and of U+2028 and U+2029 (`\xe2\x80\xae`).
 * Text that is not bytes (a field the gateway set) gets `\u202e`. Space stays: it separates the
 * fields, and Node refuses it inside a request target.
 */
export const terminalSafe = (text: string): string =>
  text.replace(/[^\x20-\x5b\x5d-\x7e]/g, (character) => {
    const named = NAMED_ESCAPES[character]
    if (named) return named
    const code = character.charCodeAt(0)
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`
  })

export const requestLogLine = (entry: RequestLogEntry): string =>
  [
    entry.time.toISOString(),
    terminalSafe(entry.method),
    // Masked first: a key's characters are judged as they arrived, then escaped for the terminal.
    terminalSafe(shownPath(entry.path)),
    String(entry.status),
    `${Math.round(entry.durationMs)}ms`,
    `id=${terminalSafe(entry.requestId ?? '-')}`,
    `key=${terminalSafe(entry.keyId ?? '-')}`,
  ].join(' ')

const pathOf = (req: IncomingMessage): string => {
  const target = req.url ?? '/'
  const query = target.indexOf('?')
  return query < 0 ? target : target.slice(0, query)
}

/** `listener`, logging each request it answers through `write`. */
export const withRequestLog =
  (
    listener: RequestListener,
    write: RequestLogWriter,
    clock: Clock = systemClock,
  ): RequestListener =>
  (req, res) => {
    // The control plane is the emulated AWS management API (on AWS: CloudTrail, not this log);
    // its busiest client is this server's own key sync.
    if ((req.url ?? '').startsWith(`${LOCAL_CONTROL_PREFIX}/`)) return listener(req, res)
    const time = new Date(clock())
    const started = performance.now()
    res.once('finish', () => {
      const requestId = res.getHeader('x-amzn-RequestId')
      write(
        requestLogLine({
          time,
          method: req.method ?? '-',
          path: pathOf(req),
          status: res.statusCode,
          durationMs: performance.now() - started,
          requestId: typeof requestId === 'string' ? requestId : undefined,
          keyId: keyIds.get(res),
        }),
      )
    })
    listener(req, res)
  }
