import type { IncomingMessage } from 'node:http'
import { CONTROL_SECRET_FILE, CONTROL_SECRET_VARIABLE } from '#keys/local-control-config.ts'
import { ControlPlaneError } from './control-plane-error.ts'
import { carriesControlSecret } from './control-plane-secret.ts'

/**
 * Who may drive the local control plane: the project's own tools, not a web page and not whoever
 * reaches a forwarded port. Each rule closes one way in, checked in this order:
 * 1. `Host` must be a loopback name or address (`localhost`, `127.x.x.x`, `[::1]`) with the port
 *    this connection reached: a DNS-rebinding page sends its own host name.
 * 2. No `Origin`, and no `Sec-Fetch-Site` but `none` or `same-origin`: browsers send these with
 *    every cross-site request, the project's tools never do.
 * 3. The secret (control-plane-secret.ts), for everything but `GET /_local/outputs` (the stage's
 *    ids, no key): a forwarded port arrives from loopback with a loopback Host too.
 * 4. A body only as JSON (`application/json`, or AWS's `application/x-amz-json-1.x`, which a
 *    browser also sends only after a CORS preflight): a cross-site form or `text/plain` POST (sent without a
 *    CORS preflight) is refused even where the rules above would not catch it.
 */

const LOOPBACK_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::(\d{1,5}))?$/i

const forbidden = (message: string) => new ControlPlaneError(403, 'AccessDeniedException', message)

const hostIsLoopback = (req: IncomingMessage): boolean => {
  const match = LOOPBACK_HOST.exec(req.headers.host ?? '')
  if (!match) return false
  const port = match[1] === undefined ? 80 : Number(match[1])
  return port === req.socket.localPort
}

const hasBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')

/** JSON, or the AWS JSON protocols' own types (the WAF API the SDK calls sends these). */
const JSON_TYPES = new Set([
  'application/json',
  'application/x-amz-json-1.0',
  'application/x-amz-json-1.1',
])

const isJson = (contentType: string | undefined): boolean =>
  JSON_TYPES.has(contentType?.split(';')[0]?.trim().toLowerCase() ?? '')

/** Why a request to `/_local/` is refused, or undefined when it may go on. */
export const controlPlaneRefusal = (
  req: IncomingMessage,
  secret: string,
): ControlPlaneError | undefined => {
  if (!hostIsLoopback(req)) {
    return forbidden("Host must be a loopback name or address with this server's port")
  }
  const site = req.headers['sec-fetch-site']
  if (
    req.headers.origin !== undefined ||
    (site !== undefined && site !== 'none' && site !== 'same-origin')
  ) {
    return forbidden('The local control plane does not answer web pages')
  }
  const path = (req.url ?? '').split('?')[0]
  const open = req.method === 'GET' && path === '/_local/outputs'
  if (!open && !carriesControlSecret(req, secret)) {
    return new ControlPlaneError(
      401,
      'UnauthorizedException',
      `The local control plane needs its secret: the file ${CONTROL_SECRET_FILE} of the server's data directory (PETSTORE_DATA_DIR), or ${CONTROL_SECRET_VARIABLE}; npm run keys reads it from there by itself`,
    )
  }
  if (hasBody(req) && !isJson(req.headers['content-type'])) {
    return new ControlPlaneError(
      415,
      'UnsupportedMediaTypeException',
      'The request body must be sent as application/json',
    )
  }
  return undefined
}
