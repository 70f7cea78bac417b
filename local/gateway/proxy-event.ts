import type { APIGatewayProxyEvent, Context } from 'aws-lambda'
import type { Authorization } from './authorizer-cache.ts'
import type { RouteMatch } from './gateway-routes.ts'

/* The REST (payload v1) proxy event and Lambda context the functions are invoked with. */

export const ACCOUNT_ID = '000000000000'
export const API_ID = 'local'

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
export const lambdaContext = (
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
