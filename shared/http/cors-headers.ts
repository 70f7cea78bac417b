/**
 * CORS: the API answers browser pages of the stage's allowed origin (docs/api.md, "Browsers").
 * Keys travel in the Authorization header, never in cookies, so a page cannot borrow a visitor's
 * key without being given it: `*` is safe and is the default. One origin may replace it per stage
 * (CDK context `<stage>.corsAllowOrigin`, locally PETSTORE_CORS_ORIGIN). One value, not a list:
 * API Gateway's gateway responses (401, 429, ...) carry static headers only.
 */
export const CORS_ALLOW_ORIGIN_VARIABLE = 'CORS_ALLOW_ORIGIN'
export const DEFAULT_CORS_ALLOW_ORIGIN = '*'

/** Request headers a page may send: the key, a JSON body, a create's idempotency key. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key'] as const

/**
 * Response headers a page may read beyond the CORS-safelisted ones (Content-Type, ...): every
 * header docs/api.md documents, so a page sees rate limits, Retry-After on a 429 and the request id.
 */
export const CORS_EXPOSED_HEADERS = [
  'Location',
  'Link',
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Deprecation',
  'Sunset',
  'Idempotent-Replayed',
  'WWW-Authenticate',
  'x-amzn-RequestId',
] as const

/** How long a browser may reuse a preflight (Chromium caps it at 2 hours). */
export const CORS_MAX_AGE_SECONDS = 600

/** `*` or one origin (scheme://host[:port], no path): what Access-Control-Allow-Origin may say. */
export const isCorsAllowOrigin = (value: string): boolean => {
  if (value === '*') return true
  const url = URL.parse(value)
  return (
    url !== null && /^https?:$/.test(url.protocol) && url.origin === value && !value.includes("'")
  )
}

export const CORS_ORIGIN_RULE =
  'must be * (any page) or one origin such as https://app.example.com (scheme, host and port; no path)'

/** The headers on every answer, the functions' and the gateway's alike. */
export const corsHeaders = (allowOrigin: string): Record<string, string> => ({
  'Access-Control-Allow-Origin': allowOrigin,
  'Access-Control-Expose-Headers': CORS_EXPOSED_HEADERS.join(', '),
  // A single fixed origin does not vary with the request, so caches need no Vary: Origin.
})

/** The answer to a preflight (OPTIONS) of a resource offering `methods`. */
export const preflightHeaders = (
  allowOrigin: string,
  methods: readonly string[],
): Record<string, string> => ({
  'Access-Control-Allow-Origin': allowOrigin,
  'Access-Control-Allow-Methods': [...methods, 'OPTIONS'].join(', '),
  'Access-Control-Allow-Headers': CORS_ALLOWED_HEADERS.join(', '),
  'Access-Control-Max-Age': String(CORS_MAX_AGE_SECONDS),
})
