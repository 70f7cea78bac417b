import type { APIGatewayProxyEvent } from 'aws-lambda'
import type * as z from 'zod/mini'
import type { ErrorDetail } from '#shared/domain/error-schema.ts'
import { validationFailed } from '#shared/errors/http-error.ts'
import type { ApiEvent, ApiMiddleware } from './http-types.ts'

export interface RequestSchemas {
  body?: z.ZodMiniType
  query?: z.ZodMiniType
  path?: z.ZodMiniType
}

export type RequestInput<S extends RequestSchemas> = {
  [K in keyof S]: S[K] extends z.ZodMiniType ? z.output<S[K]> : never
}

/** Query values as given: one string, or an array when the parameter was repeated. */
const queryOf = (event: APIGatewayProxyEvent): Record<string, string | string[]> => {
  const result: Record<string, string | string[]> = {}
  const multi = event.multiValueQueryStringParameters ?? {}
  for (const [name, values] of Object.entries(multi)) {
    if (values && values.length > 0)
      result[name] = values.length === 1 ? (values[0] as string) : values
  }
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (!(name in result) && value !== undefined) result[name] = value
  }
  return result
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

/**
 * Validates path, query and JSON body against zod schemas and puts the typed result on
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
      body: () => event.jsonBody,
    }
    const input: Record<string, unknown> = {}
    const details: ErrorDetail[] = []
    for (const location of ['path', 'query', 'body'] as const) {
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
