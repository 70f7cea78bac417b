import { randomUUID } from 'node:crypto'
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import { BEARER_TOKEN_VALIDATION_PATTERN, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { Route } from '#shared/config/routes-config.ts'
import { HttpError, retryAfterHeaders, validationFailed } from '#shared/errors/http-error.ts'
import { corsHeaders, preflightHeaders } from '#shared/http/cors-headers.ts'
import { errorResponse } from '#shared/http/http-response.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import {
  type Authorization,
  AuthorizerCache,
  type CachedAuthorization,
  toAuthorization,
} from './authorizer-cache.ts'
import { FailedAuthLimiter, TARPIT_AFTER_REFUSALS, TARPIT_MS } from './failed-auth-limiter.ts'
import { FunctionInstances } from './function-instances.ts'
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
  /** Whether a key is on a usage plan of the stage (API Gateway refuses it otherwise). */
  onStagePlan?: (keyId: string) => boolean
  /**
   * `host:port` of the configured base address, known once the server listens. Functions build
   * `Location` and `Link` from the Host header the gateway hands them: this one, never the
   * client's (which anyone can set).
   */
  baseHost?: () => string | undefined
  /** Failed authentications one address may make per minute before it is refused (429). */
  failedAuthLimit?: number
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
 * denials, not failures). With `cachedOnly` (an address refused for its wrong keys) an uncached
 * header is held back: no authorizer run, no key-mirror read.
 */
export const authorizeRequest = async ({
  header,
  methodArn,
  authorizer,
  cache,
  cachedOnly = false,
  instances = new FunctionInstances(),
}: {
  header: string | undefined
  methodArn: string
  authorizer: TokenAuthorizer
  cache: AuthorizerCache
  cachedOnly?: boolean
  /** Where the authorizer runs: its deadline starts when an instance runs it. */
  instances?: FunctionInstances
}): Promise<AuthorizationOutcome | { outcome: 'held' }> => {
  if (!header || !TOKEN_PATTERN.test(header))
    return { outcome: 'refused', response: 'UNAUTHORIZED' }
  if (cachedOnly && cache.get(header) === undefined) return { outcome: 'held' }
  const invoke = async (): Promise<CachedAuthorization> => {
    try {
      const result = await instances.run('authorizer', () =>
        authorizer(
          { type: 'TOKEN', authorizationToken: header, methodArn },
          lambdaContext('authorizer', randomUUID(), FUNCTION_TIMEOUT_SECONDS.authorizer),
        ),
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
 * Step 3, the usage plan. apiKeyRequired with the AUTHORIZER key source: API Gateway meters
 * usageIdentifierKey against the stage's usage plans, and a key on none of them gets
 * INVALID_API_KEY, 403, whatever the authorizer answered
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-api-key-source.html).
 * So a key the key sync still holds in the mirror after its plan left the stage is refused all
 * the same. Locally the key's limits are the authorizer's context; `onStagePlan` asks the
 * control plane whether the key is on a plan of the local stage.
 */
export const usagePlanVerdict = (
  authorization: Authorization,
  usagePlans: UsagePlanThrottle,
  onStagePlan?: (keyId: string) => boolean,
): BackstopVerdict | 'INVALID_API_KEY' => {
  const limits = limitsOf(authorization.context)
  if (!authorization.usageKeyDigest || !limits) return 'INVALID_API_KEY'
  const keyId = authorization.context?.keyId
  if (onStagePlan && (typeof keyId !== 'string' || !onStagePlan(keyId))) return 'INVALID_API_KEY'
  return usagePlans.admit(authorization.usageKeyDigest, limits)
}

const failedAuthError = (retryAfterSeconds: number) =>
  new HttpError('too_many_failed_auths', { headers: retryAfterHeaders(retryAfterSeconds) })

/**
 * Failed authentications per address (FailedAuthLimiter), requests without a well-formed key
 * apart from wrong keys: what one request's address has left, for the kind of request it is.
 */
const addressLimits = (options: ConstructorParameters<typeof FailedAuthLimiter>[0]) => {
  const keyless = new FailedAuthLimiter(options)
  const wrongKeys = new FailedAuthLimiter(options)
  return (req: IncomingMessage, wellFormed: boolean) => {
    const address = req.socket.remoteAddress ?? 'unknown'
    const failures = wellFormed ? wrongKeys : keyless
    return {
      /** Seconds until the address may try again, when it is refused. */
      retryAfter: failures.retryAfterSeconds(address),
      /** Counts a failure; the seconds it is now refused for, if it is. */
      record: (): number | undefined => {
        failures.record(address)
        return failures.retryAfterSeconds(address)
      },
      /** The address's 429; its connection is slowed down past many refusals. */
      refused: (res: ServerResponse, seconds: number): HttpError => {
        slowDown(req, res, failures.noteRefused(address))
        return failedAuthError(seconds)
      },
    }
  }
}

/**
 * After a refused address's 429 is sent: past TARPIT_AFTER_REFUSALS in its window, the
 * connection it came on is read again only TARPIT_MS later (failed-auth-limiter.ts).
 */
const slowDown = (req: IncomingMessage, res: ServerResponse, refusals: number): void => {
  if (refusals <= TARPIT_AFTER_REFUSALS) return
  res.once('finish', () => {
    const socket = req.socket
    setImmediate(() => {
      socket.pause()
      setTimeout(() => socket.resume(), TARPIT_MS).unref()
    })
  })
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
  {
    handlers,
    onError,
    instances,
  }: Pick<Required<LocalGatewayOptions>, 'handlers' | 'onError'> & {
    instances: FunctionInstances
  },
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
    // On an instance of its own: its deadline starts when it runs, not while it waits for one.
    return await instances.run(route.operationId, () =>
      handlers[route.operationId](
        event,
        lambdaContext(
          route.functionName,
          randomUUID(),
          FUNCTION_TIMEOUT_SECONDS[route.operationId],
        ),
      ),
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
 * 1. route (matchRoute), before authentication, as API Gateway does;
 * 2. authorize (authorizeRequest), counting failures per address, requests without a well-formed
 *    key apart from wrong keys (as the WAF's keyless and keyed rules count them apart on AWS):
 *    an address over its keyless limit is refused keyless requests only; one over its wrong-key
 *    limit is answered from the authorizer cache alone, so a key it already proved (or any
 *    address did, within the TTL) still works and a new guess costs no authorizer run or read;
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
  onStagePlan,
  baseHost = () => undefined,
  failedAuthLimit,
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
  const addressOf = addressLimits({
    clock,
    ...(failedAuthLimit !== undefined ? { limit: failedAuthLimit } : {}),
  })
  const cache =
    authorizerCache ?? new AuthorizerCache({ ttlSeconds: authorizerCacheTtlSeconds, clock })
  const usagePlans =
    usagePlanThrottle ?? new UsagePlanThrottle({ clock, ...(backstopFor ? { backstopFor } : {}) })
  // The functions' instances (function-instances.ts): the authorizer's too.
  const functions = { handlers, onError, instances: new FunctionInstances() }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID()
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
    const methods = corsAllowOrigin === undefined ? [] : resourceMethods(url.pathname)
    if (method === 'OPTIONS' && methods.length > 0) {
      // The resource's OPTIONS method: a mock integration, no authorizer, no key, no body read,
      // and never counted or refused per address: a browser sends one before each keyed request.
      const headers = preflightHeaders(corsAllowOrigin as string, methods)
      return send(res, { statusCode: 204, headers, body: '' }, requestId)
    }
    const header = req.headers.authorization
    const wellFormed = header !== undefined && TOKEN_PATTERN.test(header)
    const failures = addressOf(req, wellFormed)
    const retryAfter = failures.retryAfter
    const refuseAddress = (seconds: number) => answer(failures.refused(res, seconds))
    // A request without a well-formed key from an address over its keyless limit: at once, as
    // the WAF's keyless rule does on AWS. Keyed requests are never counted with these.
    if (retryAfter !== undefined && !wellFormed) return refuseAddress(retryAfter)

    const match = matchRoute(method, url.pathname)
    if (!match) return refuse('MISSING_AUTHENTICATION_TOKEN')

    const authorized = await authorizeRequest({
      header,
      methodArn: `arn:aws:execute-api:local:${ACCOUNT_ID}:${API_ID}/${stage}/${method}${match.resource}`,
      authorizer,
      cache,
      cachedOnly: retryAfter !== undefined,
      instances: functions.instances,
    })
    if (authorized.outcome === 'held') return refuseAddress(retryAfter as number)
    if (authorized.outcome === 'failed') {
      onError('Authorizer failed', authorized.error)
      return refuse('DEFAULT_5XX')
    }
    if (authorized.outcome === 'refused') {
      const stillRefused = failures.record()
      if (retryAfter !== undefined && stillRefused !== undefined) {
        return refuseAddress(stillRefused)
      }
      return refuse(authorized.response)
    }

    onAuthorized(res, authorized.authorization.principalId)
    const verdict = usagePlanVerdict(authorized.authorization, usagePlans, onStagePlan)
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
    const answered = await invokeFunction(functions, { route: match.route, event, requestId, cors })
    send(res, answered, requestId)
  }

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      onError('Local gateway failed', error)
      if (!res.headersSent) sendError(res, 'DEFAULT_5XX', 'local')
      else res.destroy()
    })
  }
}
