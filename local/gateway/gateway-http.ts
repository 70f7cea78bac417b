import { randomUUID } from 'node:crypto'
import type { EventEmitter } from 'node:events'
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { APIGatewayProxyResult } from 'aws-lambda'
import { HttpError } from '#shared/errors/http-error.ts'
import { GATEWAY_RESPONSES } from '#shared/http/gateway-responses-config.ts'
import { errorResponse, type HttpResponse } from '#shared/http/http-response.ts'

/* The gateway's HTTP: the request target, the body read within API Gateway's limit, answers. */

/** API Gateway's own payload limit; the functions enforce the API's 16 KiB limit. */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024

/**
 * The request target as a URL. An absolute-form target (`GET http://host/v1/pets`, which HTTP/1.1
 * servers must accept) that does not parse as a URL is the client's error (400), not a 500.
 */
export const requestUrl = (req: IncomingMessage): URL | undefined =>
  URL.parse(req.url ?? '/', 'http://local') ?? undefined

/** Node's own test for an `Expect: 100-continue` request (lib/_http_server.js). */
export const EXPECTS_CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

/** A response written straight to a socket that has no ServerResponse (CONNECT). */
const writeRaw = (socket: Duplex, result: HttpResponse, requestId: string): void => {
  const body = Buffer.from(result.body ?? '')
  const headers = {
    ...result.headers,
    'x-amzn-RequestId': requestId,
    'Content-Length': String(body.length),
    Connection: 'close',
  }
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n')
  const status = `${result.statusCode} ${STATUS_CODES[result.statusCode] ?? ''}`
  socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${status}\r\n${head}\r\n\r\n`), body]))
}

/**
 * CONNECT asks for a tunnel, which no route offers: the gateway's route_not_found, as for any
 * other method it does not know (Node would otherwise drop the connection without an answer).
 */
export const refuseTunnel = (_req: IncomingMessage, socket: Duplex): void => {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const requestId = randomUUID()
  writeRaw(
    socket,
    errorResponse(gatewayError('MISSING_AUTHENTICATION_TOKEN'), requestId),
    requestId,
  )
}

export const send = (
  res: ServerResponse,
  result: APIGatewayProxyResult,
  requestId: string,
): void => {
  const body = result.isBase64Encoded
    ? Buffer.from(result.body, 'base64')
    : Buffer.from(result.body ?? '')
  res.statusCode = result.statusCode
  for (const [name, value] of Object.entries(result.headers ?? {}))
    res.setHeader(name, String(value))
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {}))
    res.setHeader(name, values.map(String))
  res.setHeader('x-amzn-RequestId', requestId)
  res.setHeader('Content-Length', body.length)
  res.end(body)
}

/** What readBody needs of a request: its body stream and whether it arrived whole. */
interface BodyStream extends Pick<EventEmitter, 'on'> {
  readonly complete: boolean
}

/**
 * The body, or undefined past API Gateway's 10 MB (413): the rest is counted, never buffered.
 * Rejects when the connection goes away mid-body (a client that gave up, or a shutdown cutting
 * it off).
 */
export const readBody = (req: BodyStream): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let tooLarge = false
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > GATEWAY_MAX_BODY_BYTES) tooLarge = true
      else chunks.push(chunk)
    })
    req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)))
    req.on('error', reject)
    req.on('close', () => {
      if (!req.complete) reject(new Error('request body incomplete'))
    })
  })

export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'INVALID_API_KEY'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'REQUEST_TOO_LARGE'
  | 'THROTTLED'
  | 'QUOTA_EXCEEDED'
  | 'DEFAULT_5XX'

/** A gateway response as the CDK stack configures it (code and headers, e.g. Retry-After). */
export const gatewayError = (type: GatewayResponseType): HttpError => {
  const spec = GATEWAY_RESPONSES.find((response) => response.type === type)
  if (!spec) throw new Error(`No gateway response for ${type}`)
  return new HttpError(spec.code, { headers: { ...spec.headers } })
}
