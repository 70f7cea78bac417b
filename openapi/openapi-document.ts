import * as z from 'zod/mini'
import { BEARER_CHALLENGE } from '#shared/auth/bearer-token.ts'
import { PLAN_DISPLAY_NAMES, PLAN_LIMITS, PLAN_NAMES } from '#shared/config/plans-config.ts'
import {
  API_VERSION_PATH,
  errorStatusesOf,
  type OperationId,
  ROUTES,
  type Route,
  routeOf,
} from '#shared/config/routes-config.ts'
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_WINDOW_SECONDS,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyKeySchema,
} from '#shared/domain/idempotency-schema.ts'
import { ListPetsQuerySchema } from '#shared/domain/list-pets-query-schema.ts'
import { Int64Schema, NewPetSchema } from '#shared/domain/new-pet-schema.ts'
import { PetPathSchema } from '#shared/domain/pet-path-schema.ts'
import { PET_STATUSES, PetIdSchema, PetSchema } from '#shared/domain/pet-schema.ts'
import { ERROR_STATUS, type ErrorCode } from '#shared/errors/error-codes.ts'
import { ErrorSchema } from '#shared/errors/error-schema.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'
import { RATE_LIMIT_HEADER_NAMES } from '#shared/rate-limit/rate-limit-headers.ts'

/**
 * The OpenAPI 3.1 document of the API, built from the zod schemas (types and validation), the
 * route table, the error table and the plan table: one source of truth, so the published contract
 * cannot drift from the code. `npm run openapi` writes it to openapi/openapi.json; a test fails
 * when the committed file is stale, and the end-to-end suite checks every response against it.
 */

type JsonSchema = Record<string, unknown>

/** zod -> JSON Schema 2020-12 (OpenAPI 3.1's dialect), int64 spelled as OpenAPI spells it. */
const jsonSchemaOf = (schema: z.ZodMiniType, io: 'input' | 'output'): JsonSchema => {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    override: (context) => {
      const zodSchema = context.zodSchema as unknown
      const type = (zodSchema as { _zod?: { def?: { type?: string } } })._zod?.def?.type
      if (zodSchema === Int64Schema || type === 'bigint') {
        // Exact int64: clients must parse these digits without rounding (JSON numbers).
        for (const key of Object.keys(context.jsonSchema)) delete context.jsonSchema[key]
        Object.assign(context.jsonSchema, { type: 'integer', format: 'int64' })
      } else if (zodSchema === PetIdSchema) {
        Object.assign(context.jsonSchema, { format: 'int64' })
      }
    },
  }) as JsonSchema
  return json
}

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` })

type ZodDef = { type: string; in?: z.ZodMiniType; out?: z.ZodMiniType; checks?: ZodCheck[] }
type ZodCheck = { _zod: { def: { check: string; value: unknown; inclusive?: boolean } } }
const defOf = (schema: z.ZodMiniType): ZodDef =>
  (schema as unknown as { _zod: { def: ZodDef } })._zod.def

/** A bigint's bounds as JSON numbers, where a JSON number holds them exactly. */
const bigintBounds = (checks: ZodCheck[] = []): JsonSchema => {
  const bounds: JsonSchema = {}
  for (const { _zod } of checks) {
    const { check, value, inclusive } = _zod.def
    if (typeof value !== 'bigint' || !inclusive) continue
    if (value < BigInt(Number.MIN_SAFE_INTEGER) || value > BigInt(Number.MAX_SAFE_INTEGER)) continue
    if (check === 'greater_than') bounds.minimum = Number(value)
    if (check === 'less_than') bounds.maximum = Number(value)
  }
  return bounds
}

/**
 * What a path or query value is, from the zod schema that validates it: as a client writes it,
 * after the schema's parsing of the text (a number, an int64, a status) and before any
 * conversion for the handler (the path's int64 handed over as a number).
 */
const parameterSchemaOf = (schema: z.ZodMiniType): JsonSchema => {
  const def = defOf(schema)
  if (def.type === 'pipe' && def.in && def.out && defOf(def.out).type === 'transform') {
    return parameterSchemaOf(def.in)
  }
  if (def.type === 'pipe' && def.out && defOf(def.out).type === 'bigint') {
    return parameterSchemaOf(def.out)
  }
  if (def.type === 'bigint')
    return { type: 'integer', format: 'int64', ...bigintBounds(def.checks) }
  const json = jsonSchemaOf(schema, 'output')
  const { enum: values, ...rest } = json
  if (JSON.stringify(values) === JSON.stringify(PET_STATUSES)) {
    return {
      ...ref('schemas', 'PetStatus'),
      ...(rest.default === undefined ? {} : { default: rest.default }),
    }
  }
  return json
}

/**
 * An operation's path or query parameters, generated from the zod object that validates them, one
 * per member, each with its description (a member without one fails the type-check).
 */
const parametersOf = <Shape extends Record<string, z.ZodMiniType>>(
  schema: z.ZodMiniObject<Shape>,
  location: 'path' | 'query',
  descriptions: Record<keyof Shape & string, string>,
) =>
  (Object.entries(schema.shape) as [keyof Shape & string, z.ZodMiniType][]).map(
    ([name, member]) => {
      const optional = ['optional', 'default'].includes(defOf(member).type)
      return {
        name,
        in: location,
        ...(optional ? {} : { required: true }),
        description: descriptions[name],
        schema: parameterSchemaOf(member),
      }
    },
  )

const PET_DESCRIPTION = {
  name: "The pet's name: at least one non-whitespace character, at most 200.",
  categoryId: 'Id of the category the pet belongs to (int64, kept exactly).',
  status: 'Availability; optional, no default. A pet without it appears only in unfiltered lists.',
}

const withDescriptions = (schema: JsonSchema, descriptions: Record<string, string>) => {
  const properties = schema.properties as Record<string, JsonSchema>
  for (const [name, description] of Object.entries(descriptions)) {
    if (properties[name]) properties[name] = { ...properties[name], description }
  }
  return schema
}

const integerHeader = (description: string) => ({
  description,
  schema: { type: 'integer', minimum: 0 },
})
const stringHeader = (description: string, required = false) => ({
  description,
  ...(required ? { required: true } : {}),
  schema: { type: 'string' },
})

const headers = {
  'X-RateLimit-Limit': integerHeader(
    'Requests allowed in the window (UTC minute or UTC day) with the fewest requests left.',
  ),
  'X-RateLimit-Remaining': integerHeader('Requests left in that window.'),
  'X-RateLimit-Reset': integerHeader('When that window resets, in Unix seconds.'),
  'RateLimit-Policy': stringHeader(
    'Both windows, IETF draft-ietf-httpapi-ratelimit-headers, e.g. `"minute";q=60;w=60, "day";q=1000;w=86400`.',
  ),
  RateLimit: stringHeader(
    'What is left of both windows, e.g. `"minute";r=59;t=42, "day";r=999;t=3600`.',
  ),
  'Retry-After': { ...integerHeader('Seconds to wait before retrying.'), required: true },
  Location: {
    ...stringHeader("The new pet's address: `{base}/pets/{id}`.", true),
    schema: { type: 'string', format: 'uri' },
  },
  [IDEMPOTENT_REPLAYED_HEADER]: {
    description: `\`true\` when this is the stored answer to an earlier request with the same \`${IDEMPOTENCY_KEY_HEADER}\`.`,
    schema: { type: 'string', enum: ['true'] },
  },
  Link: stringHeader('RFC 8288: `<{url with cursor}>; rel="next"` when more pets exist.'),
  'X-Next-Cursor': stringHeader('The cursor of the next page (also in the `next` link).'),
  Deprecation: stringHeader(
    'RFC 9745: when the operation was deprecated, `@{unix seconds}`.',
    true,
  ),
  Sunset: stringHeader('RFC 8594: when the operation is removed (HTTP date).', true),
  SuccessorLink: {
    ...stringHeader('`<{base}/pets>; rel="successor-version"`: the replacement operation.', true),
  },
  'WWW-Authenticate': stringHeader(`RFC 6750 challenge: \`${BEARER_CHALLENGE}\`.`, true),
} as const

type HeaderName = keyof typeof headers

/**
 * Rate-limit headers are on every answer to a request with a valid key: required on success; on
 * errors absent when the key was not valid or the gateway answered before any function ran.
 */
const rateLimitHeaders = (required: boolean) =>
  Object.fromEntries(
    RATE_LIMIT_HEADER_NAMES.map((name) => [
      name,
      required ? { ...headers[name], required } : headers[name],
    ]),
  )

/** Header objects inline (a reference could not say `required` per response). */
const headerObjects = (names: readonly HeaderName[]) =>
  Object.fromEntries(names.map((name) => [name === 'SuccessorLink' ? 'Link' : name, headers[name]]))

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid JSON (`invalid_json`) or a value that breaks the schema (`validation_failed`, with `details`).',
  401: 'API key missing, malformed, unknown or revoked (`unauthorized`).',
  404: 'No pet with that id (`pet_not_found`).',
  409: `Another request with this \`${IDEMPOTENCY_KEY_HEADER}\` is still running (\`idempotency_in_progress\`).`,
  410: 'The operation was removed at its sunset (`gone`).',
  413: `Body over ${MAX_BODY_BYTES / 1024} KiB (\`payload_too_large\`).`,
  415: 'Body not `application/json` (`unsupported_media_type`).',
  422: `This \`${IDEMPOTENCY_KEY_HEADER}\` was used with a different body (\`idempotency_key_reused\`).`,
  429: 'Over the per-minute limit (`rate_limited`), the daily quota (`quota_exceeded`), suspended (`key_suspended`), or too many requests without a valid key from one address (`too_many_failed_auths`).',
  500: 'Unexpected error (`internal_error`), logged with the request id.',
  503: 'The datastore throttles or fails (`service_unavailable`); retry after `Retry-After`.',
}

const codesWith = (status: number): ErrorCode[] =>
  (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((code) => ERROR_STATUS[code] === status)

/** One reusable response per error status, its codes listed, its headers documented. */
const errorResponse = (status: number) => {
  const extra: Record<string, unknown> =
    status === 401
      ? headerObjects(['WWW-Authenticate'])
      : {
          ...rateLimitHeaders(false),
          ...([409, 429, 503].includes(status) ? headerObjects(['Retry-After']) : {}),
        }
  return {
    description: ERROR_DESCRIPTIONS[status] ?? `Error ${status}.`,
    ...(Object.keys(extra).length > 0 ? { headers: extra } : {}),
    content: {
      'application/json': {
        schema: {
          allOf: [
            ref('schemas', 'Error'),
            {
              type: 'object',
              properties: {
                code: { enum: codesWith(status) },
                status: { const: status },
              },
            },
          ],
        },
      },
    },
  }
}

/** The error statuses an operation can answer (its route's), gateway and function alike. */
const errorResponses = (operationId: OperationId, extraHeaders: Record<string, unknown>) =>
  Object.fromEntries(
    errorStatusesOf(routeOf(operationId)).map((status) => {
      const base = { $ref: `#/components/responses/Error${status}` }
      if (Object.keys(extraHeaders).length === 0 || status === 401) return [String(status), base]
      // A deprecated operation marks its errors too: spell the response out with its headers.
      // Not required on a 429: the gateway's usage-plan throttle and quota (THROTTLED,
      // QUOTA_EXCEEDED gateway responses) answer before any function could add them.
      const marks =
        status === 429
          ? Object.fromEntries(
              Object.entries(extraHeaders).map(([name, header]) => [
                name,
                { ...(header as object), required: false },
              ]),
            )
          : extraHeaders
      const shared = errorResponse(status)
      return [String(status), { ...shared, headers: { ...(shared.headers ?? {}), ...marks } }]
    }),
  )

const planTable = PLAN_NAMES.map((plan) =>
  plan === 'enterprise'
    ? `| ${PLAN_DISPLAY_NAMES[plan]} | custom | custom |`
    : `| ${PLAN_DISPLAY_NAMES[plan]} | ${PLAN_LIMITS[plan].perMinute} | ${PLAN_LIMITS[plan].perDay} |`,
).join('\n')

const listPets = () => ({
  operationId: 'listPets',
  summary: 'List pets',
  description:
    'A page of pets, optionally filtered by status (ordered by id when filtered). When more exist the response carries `Link: <...>; rel="next"` and `X-Next-Cursor`; the body stays a plain array.',
  parameters: parametersOf(ListPetsQuerySchema, 'query', {
    limit: 'Maximum number of pets returned.',
    status: 'Only pets with this status.',
    cursor:
      'Opaque position from `X-Next-Cursor` (or the `next` link); only valid with the same `status`.',
  }),
  responses: {
    200: {
      description: 'A page of pets.',
      headers: { ...rateLimitHeaders(true), ...headerObjects(['Link', 'X-Next-Cursor']) },
      content: { 'application/json': { schema: ref('schemas', 'Pets') } },
    },
    ...errorResponses('listPets', {}),
  },
})

const createPet = () => ({
  operationId: 'createPet',
  summary: 'Add a pet',
  description: `Stores a new pet and answers with it and its assigned id. With \`${IDEMPOTENCY_KEY_HEADER}\` a repeat within ${IDEMPOTENCY_WINDOW_SECONDS / 3600} hours gets the first answer again (marked \`${IDEMPOTENT_REPLAYED_HEADER}: true\`) instead of a second pet.`,
  parameters: [
    {
      name: IDEMPOTENCY_KEY_HEADER,
      in: 'header',
      description: `Makes retries safe: scoped to the API key, remembered ${IDEMPOTENCY_WINDOW_SECONDS / 3600} hours.`,
      schema: jsonSchemaOf(IdempotencyKeySchema, 'input'),
    },
  ],
  requestBody: {
    required: true,
    content: { 'application/json': { schema: ref('schemas', 'NewPet') } },
  },
  responses: {
    201: {
      description: 'The new pet (or, with a repeated Idempotency-Key, the first answer again).',
      headers: {
        ...rateLimitHeaders(true),
        ...headerObjects(['Location', IDEMPOTENT_REPLAYED_HEADER as HeaderName]),
      },
      content: { 'application/json': { schema: ref('schemas', 'Pet') } },
    },
    ...errorResponses('createPet', {}),
  },
})

const getPet = () => {
  const route = routeOf('getPet')
  const sunset = 'deprecation' in route ? route.deprecation.sunsetAt.slice(0, 10) : ''
  const deprecationHeaders = headerObjects(['Deprecation', 'Sunset', 'SuccessorLink'])
  return {
    operationId: 'getPet',
    summary: 'Get a pet (deprecated)',
    description: `Deprecated: removed on ${sunset} (410 \`gone\` from then on). Use \`GET /pets\` with the \`status\` filter.`,
    parameters: parametersOf(PetPathSchema, 'path', { petId: 'Id of the pet.' }),
    responses: {
      200: {
        description: 'The pet.',
        headers: { ...rateLimitHeaders(true), ...deprecationHeaders },
        content: { 'application/json': { schema: ref('schemas', 'Pet') } },
      },
      ...errorResponses('getPet', deprecationHeaders),
    },
  }
}

/**
 * Each operation of the route table, as the document describes it (its success answer, its
 * parameters and body); its error answers come from the route's statuses. A route without an
 * entry here fails the type-check.
 */
const OPERATIONS: Record<
  OperationId,
  () => { operationId: string; summary: string; responses: object }
> = {
  listPets,
  createPet,
  getPet,
}

const paths = () => {
  const result: Record<string, Record<string, unknown>> = {}
  for (const route of ROUTES) {
    const operation = OPERATIONS[route.operationId]()
    if (
      operation.operationId !== route.operationId ||
      !(route.successStatus in operation.responses)
    ) {
      throw new Error(
        `openapi-document.ts: ${route.operationId} must describe operationId ${route.operationId} and its ${route.successStatus} answer (shared/config/routes-config.ts)`,
      )
    }
    result[route.path] ??= {}
    // Deprecated when its route entry says so, and only then.
    ;(result[route.path] as Record<string, unknown>)[route.method.toLowerCase()] =
      'deprecation' in route ? { ...operation, deprecated: true } : operation
  }
  return result
}

export const buildOpenApiDocument = () => ({
  openapi: '3.1.0',
  info: {
    title: 'Pet store API',
    version: '1.0.0',
    summary: 'A pet store catalogue over HTTP with JSON bodies.',
    description: [
      // The route table's operations, as each describes itself: no list of them to keep by hand.
      `Operations: ${ROUTES.map((route) => `${OPERATIONS[route.operationId]().summary} (\`${route.method} ${route.path}\`)`).join(', ')}. Every operation needs \`Authorization: Bearer <key>\`.`,
      '',
      "Every answer an operation gives to a request with a valid key carries `X-RateLimit-*` and `RateLimit-Policy`/`RateLimit` (the gateway's own answers, such as 404 `route_not_found`, carry none). Plans:",
      '',
      '| plan | requests per minute | requests per day |',
      '|---|---|---|',
      planTable,
      '',
      'Over a limit: 429 with `Retry-After`; a key whose refused requests in one minute exceed its per-minute limit is suspended for 15 minutes. Every error is `application/json` with `{code, message, status}`.',
    ].join('\n'),
    license: { name: 'MIT', identifier: 'MIT' },
  },
  servers: [
    {
      url: `https://{apiId}.execute-api.{region}.amazonaws.com/production${API_VERSION_PATH}`,
      description: 'Production (or https://{domain}/v1 behind a custom domain)',
      variables: {
        apiId: {
          default: 'abc123defg',
          description: 'The REST API id (stack output RestApiId).',
        },
        region: { default: 'us-east-1', description: 'The AWS region of the deployment.' },
      },
    },
    {
      url: `https://{apiId}.execute-api.{region}.amazonaws.com/staging${API_VERSION_PATH}`,
      description: 'Staging',
      variables: {
        apiId: {
          default: 'abc123defg',
          description: 'The REST API id (stack output RestApiId).',
        },
        region: { default: 'us-east-1', description: 'The AWS region of the deployment.' },
      },
    },
    { url: `http://127.0.0.1:3000${API_VERSION_PATH}`, description: 'Local (npm start)' },
  ],
  security: [{ bearerAuth: [] }],
  paths: paths(),
  components: {
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: 'An API key as a bearer token, issued per usage plan.',
      },
    },
    schemas: {
      PetStatus: { type: 'string', enum: [...PET_STATUSES] },
      NewPet: withDescriptions(jsonSchemaOf(NewPetSchema, 'input'), PET_DESCRIPTION),
      Pet: withDescriptions(jsonSchemaOf(PetSchema, 'output'), {
        id: 'Assigned by the service: positive, below 2^53, never reused.',
        ...PET_DESCRIPTION,
      }),
      Pets: { type: 'array', items: ref('schemas', 'Pet') },
      Error: jsonSchemaOf(ErrorSchema, 'output'),
    },
    responses: Object.fromEntries(
      // A deprecated operation spells its errors out (with its deprecation headers): only the
      // others' here.
      [
        ...new Set(
          ROUTES.filter((route: Route) => !('deprecation' in route)).flatMap(errorStatusesOf),
        ),
      ]
        .sort((a, b) => a - b)
        .map((status) => [`Error${status}`, errorResponse(status)]),
    ),
  },
})
