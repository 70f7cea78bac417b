import { readFileSync } from 'node:fs'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

/**
 * Checks an HTTP response against the committed OpenAPI document (openapi/openapi.json) with an
 * independent JSON Schema 2020-12 validator (ajv), never with the zod schemas the document was
 * generated from, so a mistake in the generator shows up as a failing end-to-end test.
 */

interface HeaderObject {
  required?: boolean
  schema: Record<string, unknown>
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>
  content?: Record<string, { schema: Record<string, unknown> }>
  $ref?: string
}
interface OperationObject {
  operationId: string
  responses: Record<string, ResponseObject>
}
interface OpenApiDocument {
  servers: { url: string }[]
  paths: Record<string, Record<string, OperationObject>>
  components: { responses: Record<string, ResponseObject> }
}

const DOCUMENT_FILE = new URL('./openapi.json', import.meta.url)
const DOCUMENT_ID = 'https://petstore.example/openapi.json'

const document = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as OpenApiDocument

// strict: false because an OpenAPI document is not itself a JSON Schema (openapi, paths, ...).
const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats.default(ajv)
ajv.addSchema({ ...document, $id: DOCUMENT_ID })

const pointer = (...segments: string[]) =>
  segments.map((segment) => segment.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

const validators = new Map<string, ValidateFunction>()
const validatorAt = (jsonPointer: string): ValidateFunction => {
  let validate = validators.get(jsonPointer)
  if (!validate) {
    // A JSON pointer in a URI fragment: `{petId}` and the like must be percent-encoded.
    const fragment = jsonPointer.split('/').map(encodeURIComponent).join('/')
    validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${fragment}` })
    validators.set(jsonPointer, validate)
  }
  return validate
}

/** Path templates of the document as patterns, e.g. `/pets/{petId}` -> `^/pets/([^/]+)$`. */
const templates = Object.keys(document.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}))

export interface ObservedResponse {
  method: string
  /** The full request URL. */
  url: string
  status: number
  headers: Headers
  text: string
}

const API_VERSION_SEGMENT = '/v1'

const relativePath = (url: string): string => {
  const { pathname } = new URL(url)
  const at = pathname.indexOf(`${API_VERSION_SEGMENT}/`)
  return at >= 0 ? pathname.slice(at + API_VERSION_SEGMENT.length) : pathname
}

/** The operation ids of the document, in document order. */
export const DOCUMENTED_OPERATIONS: readonly string[] = Object.values(document.paths).flatMap(
  (methods) => Object.values(methods).map((operation) => operation.operationId),
)

/** The operation a request names, or undefined when the document has no such path and method. */
export const operationIdOf = (method: string, url: string): string | undefined => {
  const path = relativePath(url)
  const match = templates.find(({ pattern }) => pattern.test(path))
  return match ? document.paths[match.template]?.[method.toLowerCase()]?.operationId : undefined
}

const describeErrors = (validate: ValidateFunction) =>
  (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message}`)

/**
 * JSON.parse rounds an int64 beyond 2^53 to a nearby integer, which validates as an integer just
 * the same; that its digits survive exactly is what the pets API tests check on the raw text.
 */
const parseBody = (text: string): unknown => JSON.parse(text)

/**
 * Every way the response breaks the contract; empty when it keeps it. A path and method the
 * document does not have must be answered 404 `route_not_found` (docs/api.md).
 */
export const contractViolations = (response: ObservedResponse): string[] => {
  const path = relativePath(response.url)
  const method = response.method.toLowerCase()
  const match = templates.find(({ pattern }) => pattern.test(path))
  const operation = match ? document.paths[match.template]?.[method] : undefined
  const problems: string[] = []
  const contentType = response.headers.get('content-type') ?? ''

  // A CORS preflight of a documented resource: 204, outside the document (docs/api.md, "Browsers").
  if (
    match &&
    method === 'options' &&
    response.status === 204 &&
    response.headers.has('access-control-allow-methods')
  ) {
    return []
  }
  if (!match || !operation) {
    if (response.status !== 404) problems.push(`undocumented route answered ${response.status}`)
    const validate = validatorAt(pointer('components', 'schemas', 'Error'))
    if (!contentType.startsWith('application/json') || !validate(parseBody(response.text))) {
      problems.push('undocumented route did not answer with an Error body')
    }
    return problems
  }

  const where = `${operation.operationId} ${response.status}`
  const documented = operation.responses[String(response.status)]
  if (!documented) return [`${where}: status not documented for ${operation.operationId}`]
  let responsePointer = pointer(
    'paths',
    match.template,
    method,
    'responses',
    String(response.status),
  )
  let resolved = documented
  if (documented.$ref) {
    responsePointer = documented.$ref.slice(2)
    const name = documented.$ref.split('/').at(-1) as string
    resolved = document.components.responses[name] as ResponseObject
  }

  for (const [name, header] of Object.entries(resolved.headers ?? {})) {
    const value = response.headers.get(name)
    if (value === null) {
      if (header.required) problems.push(`${where}: required header ${name} missing`)
      continue
    }
    const isInteger = header.schema.type === 'integer'
    const candidate = isInteger && /^-?\d+$/.test(value) ? Number(value) : value
    const validate = validatorAt(`${responsePointer}/headers/${pointer(name)}/schema`)
    if (!validate(candidate)) {
      problems.push(`${where}: header ${name}=${value}: ${describeErrors(validate).join('; ')}`)
    }
  }

  const media = Object.keys(resolved.content ?? {})
  if (media.length === 0) {
    if (response.text.length > 0) problems.push(`${where}: body not documented`)
    return problems
  }
  const mediaType = media.find((type) => contentType.startsWith(type))
  if (!mediaType) {
    problems.push(`${where}: content type ${contentType} not one of ${media.join(', ')}`)
    return problems
  }
  let body: unknown
  try {
    body = parseBody(response.text)
  } catch {
    problems.push(`${where}: body is not JSON`)
    return problems
  }
  const validate = validatorAt(`${responsePointer}/content/${pointer(mediaType)}/schema`)
  if (!validate(body)) problems.push(`${where}: body ${describeErrors(validate).join('; ')}`)
  return problems
}

/** Throws when the response breaks the contract, naming every problem. */
export const assertKeepsContract = (response: ObservedResponse): void => {
  const problems = contractViolations(response)
  if (problems.length > 0) {
    throw new Error(
      `${response.method} ${response.url} broke the OpenAPI contract:\n- ${problems.join('\n- ')}`,
    )
  }
}

/** A fetch that checks every answer against the OpenAPI document before handing it on. */
export const contractCheckingFetch =
  (inner: (request: Request) => Promise<Response> = (request) => fetch(request)) =>
  async (request: Request): Promise<Response> => {
    const method = request.method
    const url = request.url
    const response = await inner(request)
    const text = await response.clone().text()
    assertKeepsContract({ method, url, status: response.status, headers: response.headers, text })
    return response
  }
