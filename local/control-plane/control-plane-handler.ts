import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { KeySyncResult } from '#keys/key-sync-contract.ts'
import type { HeldRemoval } from '#keys/key-sync-state-repository.ts'
import { LOCAL_CONTROL_PREFIX, MANAGEMENT_API_PATH } from '#keys/local-control-config.ts'
import { type LocalWaf, WafApiError } from '#local/edge/local-waf.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { ControlPlaneError } from './control-plane-error.ts'
import { controlPlaneRefusal } from './control-plane-guard.ts'
import { badRequest } from './control-plane-json.ts'
import { managementApi } from './control-plane-routes.ts'
import type { ControlPlaneStore } from './control-plane-store.ts'

/**
 * The local server's control paths, beside the API under `/v1` and never reachable from another
 * machine: the part of API Gateway's management API this project uses, at
 * `/_local/apigateway` (an APIGatewayClient with `endpoint: <origin>/_local/apigateway`, any
 * region and dummy credentials works unchanged), and local stand-ins for what a deployed
 * stage offers otherwise:
 * - `GET /_local/outputs`: the stage's "stack outputs" (BaseUrl, RestApiId, <Plan>UsagePlanId...);
 * - `POST /_local/key-sync`: a key sync run, as invoking the key-sync function does on AWS (a
 *   body `{"confirmRemovals": [<key id>...]}` is an operator's confirmation of held removals);
 * - `GET /_local/key-sync/held`: the removals the key sync holds, as its state item keeps them;
 * - `GET /_local/key-mirror/{keyHash}`: the mirror item of a key hash, as a GetItem would read it;
 * - `POST /_local/key-usage`: the rate limiter's usage and suspensions, as the keys CLI reads (and
 *   lifts) them in a deployed stage's table (keys/key-usage-requests.ts);
 * - `POST /_local/store-keys`: the store key table, as the keys CLI changes a deployed stage's
 *   (keys/store-key-requests.ts); `GET /_local/key-mac`: the MAC secrets it makes keys with, as it
 *   reads a deployed stage's from Secrets Manager.
 * - `POST /_local/wafv2`: the part of AWS WAF's API the automatic block uses (the local stage's IP
 *   sets, local/edge/local-waf.ts), for a WAFV2Client with `endpoint: <origin>/_local/wafv2`.
 */

export { MANAGEMENT_API_PATH }

export interface ControlPlaneHandlerOptions {
  store: ControlPlaneStore
  /** FlushStageAuthorizersCache of the local stage: clears the local gateway's cache. */
  flushAuthorizerCache: () => void
  /** Requests the local gateway let through today for a key value (GetUsage). */
  usedToday: (keyValue: string) => number
  /**
   * Runs a key sync that starts after this call (undefined until the server listens); with key
   * ids, the run is an operator's confirmation of the held removals they name.
   */
  runKeySync: (confirmRemovals?: readonly string[]) => Promise<KeySyncResult>
  /** The removals the key sync holds, by group (its state item's heldRemovals). */
  heldRemovals?: () => Promise<Record<string, HeldRemoval>>
  mirrorItem: (keyHash: string) => Promise<KeyMirrorItem | undefined>
  /** `POST /_local/key-usage`: the rate limiter's counts and suspensions (key-usage-requests.ts). */
  keyUsage?: (body: Record<string, unknown>) => Promise<unknown>
  /** `POST /_local/store-keys`: the store key table's calls (store-key-requests.ts). */
  storeKeys?: (body: Record<string, unknown>) => Promise<unknown>
  /** `GET /_local/key-mac`: the local stage's MAC secrets, as KEY_MAC_SECRETS writes them. */
  keyMacSecrets?: () => string
  outputs: () => Record<string, string>
  /** The local stage's WAF IP sets, served at `/_local/wafv2` (WAFV2's JSON protocol). */
  waf?: Pick<LocalWaf, 'call'>
  clock: () => number
  /** What every request that reads or changes keys must carry (control-plane-secret.ts). */
  secret: string
  onError?: (message: string, error: unknown) => void
}

/** Loopback only: a server started with HOST=0.0.0.0 must not hand out keys to the network. */
export const isLoopback = (address: string | undefined): boolean =>
  address !== undefined &&
  (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'))

/**
 * The server's one request listener: control paths from loopback go to the control plane,
 * everything else (another machine's request for them included) to the gateway, which answers
 * what it does not route with 404 route_not_found.
 */
export const withControlPaths =
  (control: RequestListener, gateway: RequestListener): RequestListener =>
  (req, res) => {
    const isControl = (req.url ?? '').startsWith(`${LOCAL_CONTROL_PREFIX}/`)
    return isControl && isLoopback(req.socket.remoteAddress) ? control(req, res) : gateway(req, res)
  }

const MAX_BODY_BYTES = 1024 * 1024

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

const readJson = (req: IncomingMessage, res: ServerResponse): Promise<Record<string, unknown>> =>
  new Promise((resolve, reject) => {
    if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue()
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) chunks.push(chunk)
    })
    req.on('error', reject)
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return reject(badRequest('Request body too large'))
      const text = Buffer.concat(chunks).toString('utf8')
      if (text.trim() === '') return resolve({})
      try {
        const parsed: unknown = JSON.parse(text)
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          return reject(badRequest('Request body must be a JSON object'))
        }
        resolve(parsed as Record<string, unknown>)
      } catch {
        reject(badRequest('Request body is not valid JSON'))
      }
    })
  })

const send = (res: ServerResponse, status: number, body?: unknown, type?: string) => {
  const text = body === undefined ? '' : JSON.stringify(body)
  res.statusCode = status
  res.setHeader('Content-Type', 'application/json')
  if (type) res.setHeader('x-amzn-ErrorType', type)
  res.setHeader('Content-Length', Buffer.byteLength(text))
  res.end(text)
}

/**
 * A refusal in the Error body (`code`, `message`, `status`), the code being the exception API
 * Gateway names in `x-amzn-ErrorType`, which the AWS SDKs read.
 */
const sendError = (res: ServerResponse, error: ControlPlaneError) =>
  send(
    res,
    error.status,
    { code: error.type, message: error.message, status: error.status },
    error.type,
  )

/** `POST /_local/wafv2`: one call of WAFV2's JSON protocol on the local stage's IP sets. */
const serveWaf = ({
  req,
  res,
  waf,
  body,
  onError,
}: {
  req: IncomingMessage
  res: ServerResponse
  waf: NonNullable<ControlPlaneHandlerOptions['waf']>
  body: () => Promise<Record<string, unknown>>
  onError: ControlPlaneHandlerOptions['onError']
}): void => {
  body().then(
    (request) => {
      try {
        send(res, 200, waf.call(header(req, 'x-amz-target'), request))
      } catch (error) {
        // WAFV2's JSON protocol: the exception's name in `__type` and x-amzn-ErrorType.
        const refusal =
          error instanceof WafApiError
            ? error
            : new WafApiError(500, 'WAFInternalErrorException', 'Internal error')
        if (!(error instanceof WafApiError)) onError?.('Local WAF failed', error)
        send(res, refusal.status, { __type: refusal.type, message: refusal.message }, refusal.type)
      }
    },
    (error: unknown) =>
      error instanceof ControlPlaneError
        ? sendError(res, error)
        : send(
            res,
            400,
            { __type: 'WAFInvalidParameterException', message: 'Unreadable request' },
            'WAFInvalidParameterException',
          ),
  )
}

export const createControlPlaneHandler = (options: ControlPlaneHandlerOptions): RequestListener => {
  const managementCalls = managementApi(options)

  const local = async (
    method: string,
    segments: string[],
    body: () => Promise<Record<string, unknown>>,
  ): Promise<{ status: number; body?: unknown }> => {
    const [name, id] = segments
    if (name === 'key-usage' && method === 'POST' && id === undefined && options.keyUsage) {
      return { status: 200, body: await options.keyUsage(await body()) }
    }
    if (name === 'store-keys' && method === 'POST' && id === undefined && options.storeKeys) {
      return { status: 200, body: await options.storeKeys(await body()) }
    }
    if (name === 'key-mac' && method === 'GET' && id === undefined && options.keyMacSecrets) {
      return { status: 200, body: { secrets: options.keyMacSecrets() } }
    }
    if (name === 'outputs' && method === 'GET' && id === undefined) {
      return { status: 200, body: options.outputs() }
    }
    if (name === 'key-sync' && method === 'POST' && id === undefined) {
      const { confirmRemovals } = await body()
      if (confirmRemovals === undefined) return { status: 200, body: await options.runKeySync() }
      if (!Array.isArray(confirmRemovals) || !confirmRemovals.every((v) => typeof v === 'string')) {
        throw badRequest('confirmRemovals takes the key ids a held removal lists')
      }
      return { status: 200, body: await options.runKeySync(confirmRemovals) }
    }
    if (name === 'key-sync' && method === 'GET' && id === 'held' && options.heldRemovals) {
      return { status: 200, body: await options.heldRemovals() }
    }
    if (name === 'key-mirror' && method === 'GET' && id !== undefined && segments.length === 2) {
      const item = await options.mirrorItem(id)
      if (!item) throw new ControlPlaneError(404, 'NotFoundException', 'Not in the key mirror')
      return { status: 200, body: item }
    }
    throw new ControlPlaneError(404, 'NotFoundException', 'Unknown local control path')
  }

  return (req, res) => {
    const refusal = controlPlaneRefusal(req, options.secret)
    if (refusal) {
      // Nothing of the request is read; the connection closes so an unread body cannot linger.
      res.setHeader('Connection', 'close')
      sendError(res, refusal)
      req.resume()
      return
    }
    const url = URL.parse(req.url ?? '/', 'http://local')
    const method = (req.method ?? 'GET').toUpperCase()
    const segments = (url?.pathname ?? '')
      .slice(LOCAL_CONTROL_PREFIX.length + 1)
      .split('/')
      .filter((segment) => segment.length > 0)
    const body = () => readJson(req, res)
    if (segments[0] === 'wafv2' && segments.length === 1 && method === 'POST' && options.waf) {
      serveWaf({ req, res, waf: options.waf, body, onError: options.onError })
      return
    }
    const answer =
      segments[0] === 'apigateway'
        ? managementCalls({
            method,
            segments: segments.slice(1),
            query: url?.searchParams ?? new URLSearchParams(),
            body,
          })
        : local(method, segments, body)
    answer.then(
      (result) => {
        // Drain an unread body so the connection stays usable.
        req.resume()
        send(res, result.status, result.body)
      },
      (error: unknown) => {
        req.resume()
        if (error instanceof ControlPlaneError) {
          sendError(res, error)
          return
        }
        options.onError?.('Local control plane failed', error)
        send(
          res,
          500,
          { code: 'InternalFailure', message: 'Internal error', status: 500 },
          'InternalFailure',
        )
      },
    )
  }
}
