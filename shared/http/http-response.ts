import type { APIGatewayProxyResult } from 'aws-lambda'
import type { ErrorBody } from '#shared/errors/error-schema.ts'
import type { HttpError } from '#shared/errors/http-error.ts'
import { stringifyJson } from './json-codec.ts'

export type HttpResponse = APIGatewayProxyResult & { headers: Record<string, string> }

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export const jsonResponse = (
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResponse => ({
  statusCode,
  headers: { 'Content-Type': JSON_CONTENT_TYPE, ...headers },
  body: stringifyJson(body),
})

/**
 * An answer without a body (a delete's 204): no Content-Type, since there is nothing to type, and
 * no body at all, which API Gateway and clients read as empty.
 */
export const emptyResponse = (
  statusCode: 204,
  headers: Record<string, string> = {},
): HttpResponse => ({ statusCode, headers: { ...headers }, body: '' })

/** The Error body of docs/api.md: `{code, message, status}` plus optional details and requestId. */
export const errorBody = (error: HttpError, requestId?: string): ErrorBody => ({
  code: error.code,
  message: error.message,
  status: error.status,
  ...(error.details ? { details: error.details } : {}),
  ...(requestId ? { requestId } : {}),
})

export const errorResponse = (error: HttpError, requestId?: string): HttpResponse =>
  jsonResponse(error.status, errorBody(error, requestId), error.headers)
