import { randomUUID } from 'node:crypto'
import type { EventEmitter } from 'node:events'
import {
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http'
import type { Duplex } from 'node:stream'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import { BEARER_TOKEN_VALIDATION_PATTERN, UNAUTHORIZED } from '#shared/auth/bearer-token.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { GATEWAY_RESPONSES } from '#shared/config/gateway-responses-config.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import { API_VERSION_PATH, ROUTES, type Route } from '#shared/config/routes-config.ts'
import { HttpError, retryAfterHeaders, validationFailed } from '#shared/errors/http-error.ts'
import { corsHeaders, preflightHeaders } from '#shared/http/cors-headers.ts'
import { errorResponse, type HttpResponse } from '#shared/http/http-response.ts'
import { type Clock, systemClock } from '#shared/time/clock.ts'
import {
  type Authorization,
  AuthorizerCache,
  type CachedAuthorization,
  toAuthorization,
} from './authorizer-cache.ts'
import { FailedAuthLimiter } from './failed-auth-limiter.ts'
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
const gatewayError = (type: GatewayResponseType): HttpError => {
  const spec = GATEWAY_RESPONSES.find((response) => response.type === type)
  if (!spec) throw new Error(`No gateway response for ${type}`)
  return new HttpError(spec.code, { headers: { ...spec.headers } })
}

/** API Gateway's own payload limit; the functions enforce the API's 16 KiB limit. */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024
const ACCOUNT_ID = '000000000000'
const API_ID = 'local'

interface CompiledRoute {
  route: Route
  resource: string
  pattern: RegExp
  parameterNames: string[]
}

const compile = (route: Route): CompiledRoute => {
  const resource = `${API_VERSION_PATH}${route.path}`
  const parameterNames: string[] = []
  const source = resource
    .split('/')
    .map((segment) => {
      const parameter = /^\{(\w+)\}$/.exec(segment)
      if (!parameter?.[1]) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      parameterNames.push(parameter[1])
      return '([^/]+)'
    })
    .join('/')
  return { route, resource, pattern: new RegExp(`^${source}$`), parameterNames }
}

const COMPILED = ROUTES.map(compile)

/** Malformed percent-encoding reaches the function as written (and fails its validation: 400). */
const safeDecode = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** A route of the table, matched by method and path, with its path parameters decoded. */
export interface RouteMatch {
  route: Route
  /** The resource as API Gateway names it, e.g. `/v1/pets/{petId}`. */
  resource: string
  pathParameters: Record<string, string> | null
}

/**
 * Step 1, routing: the route of this method and path, or undefined for API Gateway's
 * MISSING_AUTHENTICATION_TOKEN (answered before authentication).
 */
export const matchRoute = (method: string, pathname: string): RouteMatch | undefined => {
  let match: { compiled: CompiledRoute; values: string[] } | undefined
  for (const compiled of COMPILED) {
    const found = compiled.pattern.exec(pathname)
    if (found && compiled.route.method === method) match = { compiled, values: found.slice(1) }
  }
  if (!match) return undefined
  const { route, resource, parameterNames } = match.compiled
  const values = match.values
  const pathParameters =
    parameterNames.length === 0
      ? null
      : Object.fromEntries(
          parameterNames.map((name, index) => [name, safeDecode(values[index] ?? '')]),
        )
  return { route, resource, pathParameters }
}

/**
 * The request target as a URL. An absolute-form target (`GET http://host/v1/pets`, which HTTP/1.1
 * servers must accept) that does not parse as a URL is the client's error (400), not a 500.
 */
const requestUrl = (req: IncomingMessage): URL | undefined =>
  URL.parse(req.url ?? '/', 'http://local') ?? undefined

/** Node's own test for an `Expect: 100-continue` request (lib/_http_server.js). */
const EXPECTS_CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i

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

const send = (res: ServerResponse, result: APIGatewayProxyResult, requestId: string): void => {
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

/**
 * An own property whatever the name: `__proto__` sent as a header or query name is data (as in
 * the JSON API Gateway builds), never the object's prototype.
 */
const setOwn = <T>(target: Record<string, T>, name: string, value: T): void => {
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}

/** Header or query values as a REST proxy event carries them: last value, and every value. */
interface ValuesByName {
  single: Record<string, string>
  multi: Record<string, string[]>
}

const valuesByName = (pairs: Iterable<[string, string]>): ValuesByName => {
  const single: Record<string, string> = {}
  const multi: Record<string, string[]> = {}
  for (const [name, value] of pairs) {
    setOwn(single, name, value)
    setOwn(multi, name, [...(Object.hasOwn(multi, name) ? (multi[name] as string[]) : []), value])
  }
  return { single, multi }
}

/** The connection's addresses, as API Gateway reports the caller and its own endpoint. */
export interface ConnectionInfo {
  remoteAddress?: string | undefined
  localAddress?: string | undefined
  localPort?: number | undefined
}

/**
 * Headers as API Gateway passes them: the client's spelling, last value wins in `headers`, and
 * the Host and X-Forwarded-* headers the gateway sets itself (functions build absolute links
 * from them, so the client's own are dropped).
 */
export const gatewayHeaders = (
  rawHeaders: readonly string[],
  connection: ConnectionInfo,
  baseHost: string | undefined,
): ValuesByName => {
  const pairs: [string, string][] = []
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (/^(x-forwarded-(proto|port|for|host)|host)$/i.test(name)) continue
    pairs.push([name, rawHeaders[i + 1] as string])
  }
  pairs.push(
    ['Host', baseHost ?? `${connection.localAddress}:${connection.localPort}`],
    ['X-Forwarded-For', connection.remoteAddress ?? '127.0.0.1'],
    ['X-Forwarded-Port', String(connection.localPort ?? '')],
    ['X-Forwarded-Proto', 'http'],
  )
  return valuesByName(pairs)
}

/** The Lambda context of one invocation, with the function's deployed timeout as its deadline. */
const lambdaContext = (
  functionName: string,
  requestId: string,
  timeoutSeconds: number,
): Context => {
  const deadline = Date.now() + timeoutSeconds * 1000
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:${ACCOUNT_ID}:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  }
}

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
  let answer: CachedAuthorization | undefined = cache.get(header)
  if (answer === undefined) {
    try {
      const result = await authorizer(
        { type: 'TOKEN', authorizationToken: header, methodArn },
        lambdaContext('authorizer', randomUUID(), FUNCTION_TIMEOUT_SECONDS.authorizer),
      )
      answer = toAuthorization(result)
    } catch (error) {
      if ((error as Error)?.message !== UNAUTHORIZED) return { outcome: 'failed', error }
      answer = 'denied'
    }
    cache.put(header, answer)
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

/** What the REST proxy event is made of, once the request was routed, authorized and read. */
export interface ProxyEventParts {
  method: string
  url: URL
  match: RouteMatch
  headers: ValuesByName
  body: Buffer
  authorization: Authorization
  requestId: string
  stage: string
  requestTimeEpoch: number
  client: { sourceIp: string; userAgent: string | null; httpVersion: string }
}

/** Step 5, the REST (payload v1) proxy event the function gets. */
export const proxyEventOf = ({
  method,
  url,
  match,
  headers,
  body,
  authorization,
  requestId,
  stage,
  requestTimeEpoch,
  client,
}: ProxyEventParts): APIGatewayProxyEvent => {
  const query = url.searchParams.size === 0 ? undefined : valuesByName(url.searchParams)
  return {
    resource: match.resource,
    path: url.pathname,
    httpMethod: method,
    headers: headers.single,
    multiValueHeaders: headers.multi,
    queryStringParameters: query?.single ?? null,
    multiValueQueryStringParameters: query?.multi ?? null,
    pathParameters: match.pathParameters,
    stageVariables: null,
    body: body.length > 0 ? body.toString('utf8') : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: ACCOUNT_ID,
      apiId: API_ID,
      authorizer: {
        ...authorization.context,
        principalId: authorization.principalId,
        integrationLatency: 0,
      },
      httpMethod: method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: client.sourceIp,
        user: null,
        userAgent: client.userAgent,
        userArn: null,
      },
      path: url.pathname,
      protocol: `HTTP/${client.httpVersion}`,
      requestId,
      requestTimeEpoch,
      resourceId: match.route.operationId,
      resourcePath: match.resource,
      stage,
    },
  }
}

/**
 * The methods of the resource at `pathname`: what its preflight allows (the CDK stack adds an
 * OPTIONS method with a mock integration to each resource; it needs no key).
 */
export const resourceMethods = (pathname: string): string[] =>
  COMPILED.filter(({ pattern }) => pattern.test(pathname)).map(({ route }) => route.method)

const failedAuthError = (retryAfterSeconds: number) =>
  new HttpError('too_many_failed_auths', { headers: retryAfterHeaders(retryAfterSeconds) })

/**
 * The gateway in front of the functions. One request takes these steps, and any step may answer
 * instead of going on:
 * 1. route (matchRoute), before authentication, as API Gateway does;
 * 2. authorize (authorizeRequest), counting failures per address (an address over its limit is
 *    refused what fails to authenticate, never a valid key);
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
  const failedAuths = new FailedAuthLimiter({
    clock,
    ...(failedAuthLimit !== undefined ? { limit: failedAuthLimit } : {}),
  })
  const cache =
    authorizerCache ?? new AuthorizerCache({ ttlSeconds: authorizerCacheTtlSeconds, clock })
  const usagePlans =
    usagePlanThrottle ?? new UsagePlanThrottle({ clock, ...(backstopFor ? { backstopFor } : {}) })

  /** A function that throws past its error middleware: API Gateway's DEFAULT_5XX. */
  const invoke = async (
    route: Route,
    event: APIGatewayProxyEvent,
    requestId: string,
  ): Promise<APIGatewayProxyResult> => {
    try {
      return await handlers[route.operationId](
        event,
        lambdaContext(
          route.functionName,
          randomUUID(),
          FUNCTION_TIMEOUT_SECONDS[route.operationId],
        ),
      )
    } catch (error) {
      onError(`Function ${route.functionName} failed`, error)
      const response = errorResponse(gatewayError('DEFAULT_5XX'), requestId)
      return { ...response, headers: { ...response.headers, ...cors } }
    }
  }

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
    const address = req.socket.remoteAddress ?? 'unknown'
    // An address over its failed authentications is refused only what cannot authenticate: a
    // request without a well-formed key at once (as the WAF's keyless rule does on AWS), one with
    // a key once the authorizer said no. A valid key is never refused for its neighbours.
    const retryAfter = failedAuths.retryAfterSeconds(address)
    const header = req.headers.authorization
    const wellFormed = header !== undefined && TOKEN_PATTERN.test(header)
    if (retryAfter !== undefined && !wellFormed) return answer(failedAuthError(retryAfter))

    const methods = corsAllowOrigin === undefined ? [] : resourceMethods(url.pathname)
    if (method === 'OPTIONS' && methods.length > 0) {
      // The resource's OPTIONS method: a mock integration, no authorizer, no key, no body read.
      return send(
        res,
        {
          statusCode: 204,
          headers: preflightHeaders(corsAllowOrigin as string, methods),
          body: '',
        },
        requestId,
      )
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
      failedAuths.record(address)
      const stillRefused = failedAuths.retryAfterSeconds(address)
      if (retryAfter !== undefined && stillRefused !== undefined) {
        return answer(failedAuthError(stillRefused))
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
      method,
      url,
      match,
      headers: gatewayHeaders(req.rawHeaders, req.socket, baseHost()),
      body,
      authorization: authorized.authorization,
      requestId,
      stage,
      requestTimeEpoch: clock(),
      client: {
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: req.headers['user-agent'] ?? null,
        httpVersion: req.httpVersion,
      },
    })
    send(res, await invoke(match.route, event, requestId), requestId)
  }

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      onError('Local gateway failed', error)
      if (!res.headersSent) sendError(res, 'DEFAULT_5XX', 'local')
      else res.destroy()
    })
  }
}
