import { randomUUID } from 'node:crypto'
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import type { AccessLogRecord } from '#local/edge/local-access-log.ts'
import {
  LocalEdge,
  LocalEdgeDelays,
  localEdgeNumbers,
  sourceAddressOf,
  TARPIT_MS,
  WRONG_KEYS_BEFORE_DELAY,
} from '#local/edge/local-edge.ts'
import { BEARER_TOKEN_VALIDATION_PATTERN, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { Route } from '#shared/config/routes-config.ts'
import { type HttpError, validationFailed } from '#shared/errors/http-error.ts'
import { corsHeaders, preflightHeaders } from '#shared/http/cors-headers.ts'
import { errorResponse } from '#shared/http/http-response.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import {
  type Authorization,
  AuthorizerCache,
  type CachedAuthorization,
  toAuthorization,
} from './authorizer-cache.ts'
import {
  EXPECTS_CONTINUE,
  type GatewayResponseType,
  gatewayError,
  readBody,
  requestUrl,
  send,
} from './gateway-http.ts'
import { matchRoute, resourceMethods } from './gateway-routes.ts'
import { ACCOUNT_ID, API_ID, gatewayHeaders, lambdaContext, proxyEventOf } from './proxy-event.ts'
import { type BackstopFor, type BackstopVerdict, UsagePlanThrottle } from './usage-plan-throttle.ts'

/**
 * A thin emulation of the deployed API Gateway REST API: route matching from the shared route
 * table, the TOKEN authorizer in front of every route (its token validation pattern first, then
 * its result cache), each key's usage-plan backstop, REST (payload v1) proxy events, and the
 * gateway responses the CDK stack configures (401, 404 route_not_found, 413, 429, 500).
 * It holds no business logic: every answer past the gateway comes from the Lambda handlers.
 */
export type ProxyHandler = (
  event: APIGatewayProxyEvent,
  context: Context,
) => Promise<APIGatewayProxyResult>
export type TokenAuthorizer = (
  event: APIGatewayTokenAuthorizerEvent,
  context: Context,
) => Promise<APIGatewayAuthorizerResult>

export interface LocalGatewayOptions {
  handlers: Record<Route['operationId'], ProxyHandler>
  authorizer: TokenAuthorizer
  stage?: string
  /** Called for failures of the gateway itself (never with request secrets). */
  onError?: (message: string, error: unknown) => void
  /** The gateway's time (token buckets, quotas, cache expiry). */
  clock?: Clock
  /** Authorizer result cache TTL in seconds, as the stage's authorizer has it; 0 = off. */
  authorizerCacheTtlSeconds?: number
  /** The cache itself, when its owner flushes it on key changes (else one of the gateway's own). */
  authorizerCache?: AuthorizerCache
  /** The usage-plan backstop of a key's limits (default: the one the CDK deploys). */
  backstopFor?: BackstopFor
  /** The backstop itself, when its owner reads its counts (else one of the gateway's own). */
  usagePlanThrottle?: UsagePlanThrottle
  /**
   * The usage plan of the stage the metered key (usageIdentifierKey, by its digest) is on, or
   * undefined when it is on none (API Gateway refuses it: INVALID_API_KEY). Unset: every key
   * counts as on a plan with the backstop of its limits.
   */
  usagePlanOf?: UsagePlanOf
  /**
   * `host:port` of the configured base address, known once the server listens. Functions build
   * `Location` and `Link` from the Host header the gateway hands them: this one, never the
   * client's (which anyone can set).
   */
  baseHost?: () => string | undefined
  /**
   * The edge in front of the gateway: the stage's WAF web ACL, locally (local-edge.ts). Default:
   * the staging stage's numbers, no address blocked or exempt.
   */
  edge?: LocalEdge
  /** Wrong keys one address may send in a minute before their 401s are answered late. */
  wrongKeysBeforeDelay?: number
  /** Gets the access log record of every request answered past the edge (local-access-log.ts). */
  accessLog?: (record: AccessLogRecord) => void
  /**
   * The stage's CORS origin (shared/http/cors-headers.ts): preflights are answered and the
   * gateway's own answers carry the CORS headers, as the CDK stack configures them. Unset: no CORS.
   */
  corsAllowOrigin?: string
  /** Called once the key of a request is known (the request log's key id). */
  onAuthorized?: (res: ServerResponse, keyId: string) => void
}

/** The authorizer's identityValidationExpression, checked before the authorizer is invoked. */
const TOKEN_PATTERN = new RegExp(BEARER_TOKEN_VALIDATION_PATTERN)

/** What the authorization step decided. */
export type AuthorizationOutcome =
  | { outcome: 'allowed'; authorization: Authorization }
  | { outcome: 'refused'; response: 'UNAUTHORIZED' | 'ACCESS_DENIED' }
  /** The authorizer failed (anything but "Unauthorized"): API Gateway's 500, nothing cached. */
  | { outcome: 'failed'; error: unknown }

/**
 * Step 2, the TOKEN authorizer as API Gateway runs it: a header that fails the token validation
 * pattern never reaches it; otherwise a cached answer, or the authorizer's, cached (allows and
 * denials, not failures).
 */
export const authorizeRequest = async ({
  header,
  methodArn,
  authorizer,
  cache,
}: {
  header: string | undefined
  methodArn: string
  authorizer: TokenAuthorizer
  cache: AuthorizerCache
}): Promise<AuthorizationOutcome> => {
  if (!header || !TOKEN_PATTERN.test(header))
    return { outcome: 'refused', response: 'UNAUTHORIZED' }
  const invoke = async (): Promise<CachedAuthorization> => {
    try {
      const result = await authorizer(
        { type: 'TOKEN', authorizationToken: header, methodArn },
        lambdaContext('authorizer', randomUUID(), FUNCTION_TIMEOUT_SECONDS.authorizer),
      )
      return toAuthorization(result)
    } catch (error) {
      if ((error as Error)?.message !== UNAUTHORIZED) throw error
      return 'denied'
    }
  }
  let answer: CachedAuthorization
  try {
    answer = await cache.answer(header, invoke)
  } catch (error) {
    return { outcome: 'failed', error }
  }
  if (answer === 'denied') return { outcome: 'refused', response: 'UNAUTHORIZED' }
  if (!answer.allowed) return { outcome: 'refused', response: 'ACCESS_DENIED' }
  return { outcome: 'allowed', authorization: answer }
}

/** The key's plan limits from the authorizer's context (numbers may arrive as strings). */
const limitsOf = (context: Authorization['context']): PlanLimits | undefined => {
  const perMinute = Number(context?.perMinute)
  const perDay = Number(context?.perDay)
  return perMinute > 0 && perDay > 0 ? { perMinute, perDay } : undefined
}

/**
 * What the stage's usage plan of a metered key does: `backstop`, the token bucket and DAY quota of
 * the key's plan limits (what the CDK and the local control plane give every plan of a tier:
 * keys/usage-plans-config.ts); `unthrottled`, a plan with neither throttle nor quota (the pool
 * plan store keys are metered under: it refuses nothing, the stage throttle is its only bound).
 */
export type UsagePlanMetering = 'backstop' | 'unthrottled'
export type UsagePlanOf = (usageKeyDigest: string) => UsagePlanMetering | undefined

/**
 * Step 3, the usage plan. apiKeyRequired with the AUTHORIZER key source: API Gateway meters
 * usageIdentifierKey against the stage's usage plans, and a key on none of them gets
 * INVALID_API_KEY, 403, whatever the authorizer answered
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-api-key-source.html).
 * So a key the key sync still holds in the mirror after its plan left the stage is refused all
 * the same. Throttle and quota are the metered key's (AWS applies a plan's per key: "Usage plans
 * and API keys for REST APIs"): a store key is metered under the pool key, whose plan has none,
 * so no store key's flood empties a bucket another key is counted in. Locally the key's limits
 * are the authorizer's context; `usagePlanOf` asks the control plane which plan of the local
 * stage the metered key is on.
 */
export const usagePlanVerdict = (
  authorization: Authorization,
  usagePlans: UsagePlanThrottle,
  usagePlanOf?: UsagePlanOf,
): BackstopVerdict | 'INVALID_API_KEY' => {
  const limits = limitsOf(authorization.context)
  const digest = authorization.usageKeyDigest
  if (!digest || !limits) return 'INVALID_API_KEY'
  const metering = usagePlanOf ? usagePlanOf(digest) : 'backstop'
  if (metering === undefined) return 'INVALID_API_KEY'
  return usagePlans.admit(digest, metering === 'backstop' ? limits : undefined)
}

/**
 * After a refused address's 429 is sent: the connection it came on is read again only TARPIT_MS
 * later (local-edge.ts, LocalEdgeDelays).
 */
const slowDown = (req: IncomingMessage, res: ServerResponse): void => {
  res.once('finish', () => {
    const socket = req.socket
    setImmediate(() => {
      socket.pause()
      setTimeout(() => socket.resume(), TARPIT_MS).unref()
    })
  })
}

/**
 * Step 0, the edge (LocalEdge): the WAF's verdict, its answer when it refuses (with the stage's
 * CORS headers, as the web ACL sends them), and the delays of LocalEdgeDelays on what cannot carry
 * a valid key (every OPTIONS waits its turn in a flood). The request's source address, or
 * undefined once it has been answered (or its client has gone).
 */
const edgeStep = async ({
  req,
  res,
  edge,
  delays,
  method,
  answer,
}: {
  req: IncomingMessage
  res: ServerResponse
  edge: LocalEdge
  delays: LocalEdgeDelays
  method: string
  answer: (error: HttpError) => void
}): Promise<string | undefined> => {
  const address = sourceAddressOf(req.socket.remoteAddress)
  const refusal = edge.evaluate({ address, method, authorization: req.headers.authorization })
  if (refusal) {
    if (delays.slowAfterRefusal(address)) slowDown(req, res)
    answer(refusal.error)
    return undefined
  }
  const preflightWait = delays.preflightDelayMs(address, method)
  if (preflightWait > 0 && !(await pause(res, preflightWait))) return undefined
  return address
}

/** Writes the request's access log record once its answer is sent, with the answer's status. */
const logAccess = (
  res: ServerResponse,
  accessLog: ((record: AccessLogRecord) => void) | undefined,
  request: Omit<AccessLogRecord, 'status'>,
): void => {
  if (accessLog) res.once('finish', () => accessLog({ ...request, status: String(res.statusCode) }))
}

/** Resolves after `ms` with true, or with false as soon as the client has gone. */
const pause = (res: ServerResponse, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    const gone = () => {
      clearTimeout(timer)
      resolve(false)
    }
    const timer = setTimeout(() => {
      res.off('close', gone)
      resolve(!res.destroyed)
    }, ms)
    res.once('close', gone)
  })

/** Runs `answer` after `ms`, unless the client has gone meanwhile. */
const later = (res: ServerResponse, ms: number, answer: () => void): void => {
  if (ms <= 0) {
    answer()
    return
  }
  const timer = setTimeout(() => {
    if (!res.destroyed) answer()
  }, ms)
  res.once('close', () => clearTimeout(timer))
}

/** What the proxy event takes from the request itself: its headers and the client. */
const requestParts = (req: IncomingMessage, baseHost: string | undefined) => ({
  headers: gatewayHeaders(req.rawHeaders, req.socket, baseHost),
  client: {
    sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
    userAgent: req.headers['user-agent'] ?? null,
    httpVersion: req.httpVersion,
  },
})

/** A function that throws past its error middleware: API Gateway's DEFAULT_5XX. */
const invokeFunction = async (
  { handlers, onError }: Pick<Required<LocalGatewayOptions>, 'handlers' | 'onError'>,
  {
    route,
    event,
    requestId,
    cors,
  }: {
    route: Route
    event: APIGatewayProxyEvent
    requestId: string
    /** The CORS headers a gateway answer carries. */
    cors: Record<string, string>
  },
): Promise<APIGatewayProxyResult> => {
  try {
    return await handlers[route.operationId](
      event,
      lambdaContext(route.functionName, randomUUID(), FUNCTION_TIMEOUT_SECONDS[route.operationId]),
    )
  } catch (error) {
    onError(`Function ${route.functionName} failed`, error)
    const response = errorResponse(gatewayError('DEFAULT_5XX'), requestId)
    return { ...response, headers: { ...response.headers, ...cors } }
  }
}

/**
 * The gateway in front of the functions. One request takes these steps, and any step may answer
 * instead of going on:
 * 0. the edge (LocalEdge): the stage's WAF rules, before API Gateway sees the request; what it
 *    refuses gets the rule's 429 and never reaches the access log. Past the edge, every answer is
 *    written to the access log (`accessLog`), as API Gateway writes its own;
 * 1. route (matchRoute), before authentication, as API Gateway does (a resource's OPTIONS is its
 *    mock integration: the preflight's 204);
 * 2. authorize (authorizeRequest): the authorizer for every well-formed key, whatever its address
 *    sent before, so a valid key is never held back; a wrong key's 401 goes out late once its
 *    address sent many (LocalEdgeDelays);
 * 3. admit to the key's usage plan (usagePlanVerdict);
 * 4. read the body: only now, so a refused client's body is never buffered and a client waiting
 *    on `Expect: 100-continue` is asked for it only now;
 * 5. build the proxy event (proxyEventOf) and invoke the function.
 */
export const createLocalGateway = ({
  handlers,
  authorizer,
  stage = 'local',
  onError = () => undefined,
  clock = systemClock,
  authorizerCacheTtlSeconds = 0,
  authorizerCache,
  backstopFor,
  usagePlanThrottle,
  usagePlanOf,
  baseHost = () => undefined,
  edge = new LocalEdge({ numbers: localEdgeNumbers(), clock }),
  wrongKeysBeforeDelay = WRONG_KEYS_BEFORE_DELAY,
  accessLog,
  corsAllowOrigin,
  onAuthorized = () => undefined,
}: LocalGatewayOptions): RequestListener => {
  const cors = corsAllowOrigin === undefined ? {} : corsHeaders(corsAllowOrigin)
  /** A gateway answer, with the headers every gateway response of the stage carries (CORS). */
  const sendGatewayAnswer = (res: ServerResponse, error: HttpError, requestId: string): void => {
    const response = errorResponse(error, requestId)
    send(res, { ...response, headers: { ...response.headers, ...cors } }, requestId)
  }
  /** A gateway response: the API's Error body, as the CDK stack's gateway responses render it. */
  const sendError = (res: ServerResponse, type: GatewayResponseType, requestId: string): void =>
    sendGatewayAnswer(res, gatewayError(type), requestId)
  const delays = new LocalEdgeDelays({ numbers: edge.numbers, clock, wrongKeysBeforeDelay })
  const cache =
    authorizerCache ?? new AuthorizerCache({ ttlSeconds: authorizerCacheTtlSeconds, clock })
  const usagePlans =
    usagePlanThrottle ?? new UsagePlanThrottle({ clock, ...(backstopFor ? { backstopFor } : {}) })

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID()
    const receivedAt = clock()
    const answer = (error: HttpError) => sendGatewayAnswer(res, error, requestId)
    // Answers before the body is read go out at once; Node then discards the unread body
    // (never buffered) so the connection stays usable.
    const refuse = (type: GatewayResponseType) => sendError(res, type, requestId)
    const url = requestUrl(req)
    if (url === undefined) {
      const message = 'The request target is not a valid URL or path.'
      return answer(validationFailed([{ field: 'path', message }], message))
    }
    const method = (req.method ?? 'GET').toUpperCase()
    const header = req.headers.authorization
    const address = await edgeStep({ req, res, edge, delays, method, answer })
    if (address === undefined) return
    logAccess(res, accessLog, {
      requestId,
      requestTime: new Date(receivedAt).toISOString(),
      ip: address,
      httpMethod: method,
      path: url.pathname,
    })
    const methods = corsAllowOrigin === undefined ? [] : resourceMethods(url.pathname)
    if (method === 'OPTIONS' && methods.length > 0) {
      // The resource's OPTIONS method: a mock integration, no authorizer, no key, no body read.
      const headers = preflightHeaders(corsAllowOrigin as string, methods)
      return send(res, { statusCode: 204, headers, body: '' }, requestId)
    }

    const match = matchRoute(method, url.pathname)
    if (!match) return refuse('MISSING_AUTHENTICATION_TOKEN')

    const authorized = await authorizeRequest({
      header,
      methodArn: `arn:aws:execute-api:local:${ACCOUNT_ID}:${API_ID}/${stage}/${method}${match.resource}`,
      authorizer,
      cache,
    })
    if (authorized.outcome === 'failed') {
      onError('Authorizer failed', authorized.error)
      return refuse('DEFAULT_5XX')
    }
    if (authorized.outcome === 'refused') {
      const wellFormed = header !== undefined && TOKEN_PATTERN.test(header)
      const delay = wellFormed ? delays.wrongKeyDelayMs(address) : 0
      return later(res, delay, () => refuse(authorized.response))
    }

    onAuthorized(res, authorized.authorization.principalId)
    const verdict = usagePlanVerdict(authorized.authorization, usagePlans, usagePlanOf)
    if (verdict !== 'admitted') return refuse(verdict)

    if (EXPECTS_CONTINUE.test(req.headers.expect ?? '')) res.writeContinue()
    const body = await readBody(req)
    if (body === undefined) return refuse('REQUEST_TOO_LARGE')

    const event = proxyEventOf({
      ...requestParts(req, baseHost()),
      method,
      url,
      match,
      body,
      authorization: authorized.authorization,
      requestId,
      stage,
      requestTimeEpoch: clock(),
    })
    send(
      res,
      await invokeFunction({ handlers, onError }, { route: match.route, event, requestId, cors }),
      requestId,
    )
  }

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      onError('Local gateway failed', error)
      if (!res.headersSent) sendError(res, 'DEFAULT_5XX', 'local')
      else res.destroy()
    })
  }
}
