import type { APIGatewayProxyEvent } from 'aws-lambda'
import type * as z from 'zod/mini'
import type { ErrorDetail } from '#shared/errors/error-schema.ts'
import { validationFailed } from '#shared/errors/http-error.ts'
import { getHeader } from '#shared/http/http-headers.ts'
import type { ApiEvent, ApiMiddleware } from '#shared/http/http-types.ts'

// The middleware that validates a request against its zod schemas.

export interface RequestSchemas {
  body?: z.ZodMiniType
  query?: z.ZodMiniType
  path?: z.ZodMiniType
  /** Headers by canonical name: only the object's own members are looked up (case-insensitively). */
  headers?: z.ZodMiniObject
}

export type RequestInput<S extends RequestSchemas> = {
  [K in keyof S]: S[K] extends z.ZodMiniType ? z.output<S[K]> : never
}

/** Query values as given: one string, or an array when the parameter was repeated. */
const queryOf = (event: APIGatewayProxyEvent): Record<string, string | string[]> => {
  // Own properties whatever the name: a `__proto__` parameter is data, not the prototype.
  const result = new Map<string, string | string[]>()
  const multi = event.multiValueQueryStringParameters ?? {}
  for (const [name, values] of Object.entries(multi)) {
    if (values && values.length > 0)
      result.set(name, values.length === 1 ? (values[0] as string) : values)
  }
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (!result.has(name) && value !== undefined) result.set(name, value)
  }
  return Object.fromEntries(result)
}

const detailsOf = (error: z.core.$ZodError): ErrorDetail[] =>
  error.issues.flatMap((issue) => {
    const at = issue.path.map(String).join('.')
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: at ? `${at}.${key}` : key,
        message: 'is not a known field',
      }))
    }
    return [{ field: at || '(root)', message: issue.message }]
  })

/** The named headers that were sent, under the names the schema gives them. */
const headersOf = (
  event: APIGatewayProxyEvent,
  schema: z.ZodMiniObject,
): Record<string, string> => {
  const result: Record<string, string> = {}
  for (const name of Object.keys(schema.def.shape)) {
    const value = getHeader(event, name)
    if (value !== undefined) result[name] = value
  }
  return result
}

/**
 * Validates path, query, headers and JSON body against zod schemas and puts the typed result on
 * `event.input`; every broken field is named in one 400 validation_failed.
 */
export const validateRequestMiddleware = <S extends RequestSchemas>(
  schemas: S,
): ApiMiddleware<RequestInput<S>> => ({
  before: (request) => {
    const event = request.event as ApiEvent<Record<string, unknown>>
    const sources = {
      path: () => event.pathParameters ?? {},
      query: () => queryOf(event),
      headers: () => (schemas.headers ? headersOf(event, schemas.headers) : {}),
      body: () => event.jsonBody,
    }
    const input: Record<string, unknown> = {}
    const details: ErrorDetail[] = []
    for (const location of ['path', 'query', 'headers', 'body'] as const) {
      const schema = schemas[location]
      if (!schema) continue
      const result = schema.safeParse(sources[location]())
      if (result.success) input[location] = result.data
      else details.push(...detailsOf(result.error))
    }
    if (details.length > 0) throw validationFailed(details)
    event.input = input
  },
})
