import type { MiddlewareObj, Request } from '@middy/core'
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda'
import type { HttpResponse } from './http-response.ts'

/** A REST (payload v1) proxy event, plus what the request middlewares derive from it. */
export type ApiEvent<TInput = unknown> = APIGatewayProxyEvent & {
  /** The parsed JSON body (set by json-body-middleware). */
  jsonBody?: unknown
  /** Validated, typed input (set by validate-request-middleware). */
  input: TInput
}

export type ApiRequest<TInput = unknown> = Request<ApiEvent<TInput>, HttpResponse, Error, Context>
export type ApiMiddleware<TInput = unknown> = MiddlewareObj<
  ApiEvent<TInput>,
  HttpResponse,
  Error,
  Context
>

/** A middleware of the TOKEN authorizer, which API Gateway calls before any HTTP function. */
export type AuthorizerMiddleware = MiddlewareObj<
  APIGatewayTokenAuthorizerEvent,
  APIGatewayAuthorizerResult,
  Error,
  Context
>
