import { readFileSync } from 'node:fs'
import type { APIGatewayProxyEvent, APIGatewayTokenAuthorizerEvent, Context } from 'aws-lambda'
import { type KeySyncEvent, SCHEDULED_EVENT } from '#functions/key-sync/key-sync-events.ts'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import type { RouteDefinition } from '#shared/config/routes-config.ts'
import type { ApiEvent } from '#shared/http/http-types.ts'

/**
 * The recorded-shape API Gateway events in test/fixtures, adapted per route. Each call returns a
 * fresh deep copy, so a test may change it freely.
 */
const fixture = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8')) as T

const REST_EVENT = fixture<APIGatewayProxyEvent>('api-gateway-rest-event.json')
const TOKEN_EVENT = fixture<APIGatewayTokenAuthorizerEvent>(
  'api-gateway-token-authorizer-event.json',
)

/** The API key both fixtures carry (Authorization header, identity.apiKey). */
export const FIXTURE_API_KEY = 'free-fixture-key-0123456789abcdef'
export const FIXTURE_KEY_ID = 'k1a2b3c4d5'
/** API Gateway's request id in the REST fixture (requestContext.requestId). */
export const FIXTURE_REQUEST_ID = '3f0c2a8e-6f1d-4c3b-9a57-1b2c3d4e5f60'
/** The fixture's stage address: what links in responses must start with. */
export const FIXTURE_BASE_URL =
  'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/production/v1'

export const tokenAuthorizerEvent = (
  overrides: Partial<APIGatewayTokenAuthorizerEvent> = {},
): APIGatewayTokenAuthorizerEvent => ({ ...structuredClone(TOKEN_EVENT), ...overrides })

export interface RestRequest {
  method?: RouteDefinition['method']
  /** Resource below /v1, as in the route table, e.g. `/pets/{petId}`. */
  resource?: string
  pathParameters?: Record<string, string>
  /** Query values; an array is a repeated parameter. */
  query?: Record<string, string | string[]>
  /** Added to the fixture's headers; one named like a fixture header (any case) replaces it. */
  headers?: Record<string, string>
  body?: string | null
  isBase64Encoded?: boolean
  /**
   * What precedes `/v1` in requestContext.path: the stage on the execute-api host (default),
   * '' on a custom domain or the local server.
   */
  basePath?: string
  /** false drops the authorizer context (a request that never passed the authorizer). */
  authorized?: boolean
}

/** The REST fixture as API Gateway would send it for this request (stage `production`). */
export const restEvent = <TInput = never>(request: RestRequest = {}): ApiEvent<TInput> => {
  const event = structuredClone(REST_EVENT)
  const method = request.method ?? 'GET'
  const resource = `/v1${request.resource ?? '/pets'}`
  let path = resource
  for (const [name, value] of Object.entries(request.pathParameters ?? {})) {
    path = path.replace(`{${name}}`, encodeURIComponent(value))
  }
  event.resource = resource
  event.path = path
  event.httpMethod = method
  event.requestContext.httpMethod = method
  event.requestContext.resourcePath = resource
  event.requestContext.path = `${request.basePath ?? `/${event.requestContext.stage}`}${path}`
  event.pathParameters = request.pathParameters ?? null
  if (request.query) {
    const multi = Object.fromEntries(
      Object.entries(request.query).map(([name, value]) => [name, [value].flat()]),
    )
    event.multiValueQueryStringParameters = multi
    // API Gateway puts the last value of a repeated parameter in the single-value map.
    event.queryStringParameters = Object.fromEntries(
      Object.entries(multi).map(([name, values]) => [name, values.at(-1) as string]),
    )
  }
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    for (const existing of Object.keys(event.headers)) {
      if (existing.toLowerCase() === name.toLowerCase()) {
        delete event.headers[existing]
        delete event.multiValueHeaders[existing]
      }
    }
    event.headers[name] = value
    event.multiValueHeaders[name] = [value]
  }
  if (request.body !== undefined) event.body = request.body
  if (request.isBase64Encoded !== undefined) event.isBase64Encoded = request.isBase64Encoded
  if (request.authorized === false) event.requestContext.authorizer = null
  return event as ApiEvent<TInput>
}

/** A Lambda context as the runtime passes it (enough for middy and Powertools). */
export const lambdaContext = (
  functionName = 'petstore-test',
  awsRequestId = 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
  timeoutSeconds: number = FUNCTION_TIMEOUT_SECONDS.getPet,
): Context => ({
  callbackWaitsForEmptyEventLoop: true,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
  memoryLimitInMB: '256',
  awsRequestId,
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: '2027/03/05/[$LATEST]0123456789abcdef0123456789abcdef',
  // A fresh invocation of a function with this timeout.
  getRemainingTimeInMillis: () => timeoutSeconds * 1_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
})

/** A fresh invocation of the key-sync function: its run budget reads the remaining time. */
export const keySyncContext = (functionName = 'petstore-key-sync'): Context =>
  lambdaContext(functionName, undefined, FUNCTION_TIMEOUT_SECONDS.keySync)

/** The event an EventBridge schedule delivers to the key-sync function every minute. */
export const scheduledEvent: KeySyncEvent = {
  version: '0',
  id: 'schedule',
  'detail-type': SCHEDULED_EVENT,
  source: 'aws.events',
  account: '123456789012',
  time: '2027-03-05T10:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: {},
}
