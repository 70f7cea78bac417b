// The local server's answer to a request Node refuses before the gateway sees it.
import { randomUUID } from 'node:crypto'
import type { Duplex } from 'node:stream'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import { type RequestLogWriter, requestLogLine } from './request-log.ts'

/** The method and path of a request line Node could not finish parsing, when it had one. */
const requestLineOf = (rawPacket: unknown): { method: string; path: string } => {
  const text = Buffer.isBuffer(rawPacket) ? rawPacket.toString('latin1', 0, 8_192) : ''
  const match = /^([A-Z]{1,20}) (\/\S*) HTTP\//.exec(text)
  if (!match) return { method: '-', path: '-' }
  const target = match[2] as string
  const query = target.indexOf('?')
  return { method: match[1] as string, path: query < 0 ? target : target.slice(0, query) }
}

/**
 * Requests Node refuses before the gateway sees them (headers over the limit, malformed HTTP, a
 * request not received in time) still get the API's Error body, not Node's bare status line, with
 * a request id as `x-amzn-RequestId` and in the body, and a line in the request log, as every
 * other answer has.
 */
export const clientErrorAnswer =
  ({
    maxHeaderBytes,
    requestLog,
    clock = systemClock,
  }: {
    maxHeaderBytes: number
    requestLog?: RequestLogWriter | undefined
    clock?: Clock | undefined
  }) =>
  (error: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex): void => {
    if (!socket.writable) {
      socket.destroy()
      return
    }
    const time = new Date(clock())
    const requestId = randomUUID()
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW'
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    const status = timedOut ? 408 : 400
    const body = JSON.stringify({
      code: 'validation_failed',
      message: tooLarge
        ? `The request line and headers are larger than ${maxHeaderBytes} bytes.`
        : timedOut
          ? 'The request was not received in time.'
          : 'The request is not valid HTTP.',
      status,
      requestId,
    })
    socket.end(
      `HTTP/1.1 ${status} ${timedOut ? 'Request Timeout' : 'Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nx-amzn-RequestId: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    )
    requestLog?.(
      requestLogLine({
        time,
        ...requestLineOf(error.rawPacket),
        status,
        durationMs: 0,
        requestId,
        keyId: undefined,
      }),
    )
  }
