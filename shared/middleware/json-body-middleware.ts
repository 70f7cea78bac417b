import { HttpError } from '#shared/errors/http-error.ts'
import { getHeader } from '#shared/http/http-headers.ts'
import type { ApiMiddleware } from '#shared/http/http-types.ts'
import { parseJson } from '#shared/http/json-codec.ts'

export const MAX_BODY_BYTES = 16 * 1024

const JSON_MEDIA_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;.*)?$/i

/**
 * Parses a JSON object body into `event.jsonBody`, keeping int64 values exact.
 *
 * Why not @middy/http-json-body-parser: it calls the reviver with (key, value) only, dropping
 * JSON.parse's source-text argument, so integers beyond 2^53 would be rounded before any code
 * could see them. Its other checks are kept, with the status codes of docs/api.md: 415 for a
 * non-JSON media type, 400 invalid_json (not 422) for a malformed body, and a 16 KiB limit.
 */
export const jsonBodyMiddleware = (): ApiMiddleware => ({
  before: (request) => {
    const { event } = request
    const raw = event.body ?? ''
    // Decoded size, '=' padding excluded: a 16 KiB body must pass however it was encoded.
    const bytes = Buffer.byteLength(raw, event.isBase64Encoded ? 'base64' : 'utf8')
    if (bytes > MAX_BODY_BYTES) throw new HttpError('payload_too_large')
    if (raw.length === 0)
      throw new HttpError('invalid_json', { message: 'A JSON request body is required.' })
    if (!JSON_MEDIA_TYPE.test(getHeader(event, 'Content-Type') ?? '')) {
      throw new HttpError('unsupported_media_type')
    }
    const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw
    let body: unknown
    try {
      body = parseJson(text)
    } catch (error) {
      if (error instanceof HttpError) throw error
      throw new HttpError('invalid_json', { message: 'The request body is not valid JSON.' })
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HttpError('invalid_json', { message: 'The request body must be a JSON object.' })
    }
    event.jsonBody = body
  },
})
