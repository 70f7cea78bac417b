/**
 * The one grammar of `Authorization: Bearer <key>`. The gateway's validation pattern,
 * parseBearerToken and isWellFormedApiKey are all built from the fragments below, so they cannot
 * drift apart:
 *
 *   header  = scheme 1*16SP key
 *   scheme  = "Bearer", in any case (RFC 9110 §11.1)
 *   key     = 20*128 tchar *2"=", at most 128 characters in all
 *   tchar   = ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/"   (RFC 6750 §2.1 b64token)
 *
 * Why these bounds: RFC 6750 asks for 1*SP; capping it at 16 bounds the whole header (150
 * characters) by the grammar itself, so an oversized header is refused by the gateway instead of
 * costing an authorizer call. API Gateway key values are 20 to 128 characters
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-api-usage-plans.html,
 * "API keys"), '=' included; '=' is only ever trailing padding, and padding does not count toward
 * the 20 (a 19-character key plus '=' is no stronger than 19). No white space around the header:
 * HTTP parsers (API Gateway's, Node's) strip it before the value reaches either check.
 *
 * The pattern runs under Java's java.util.regex on API Gateway (with matches() or find(), which
 * must agree) and under JavaScript's RegExp locally, so it uses only constructs both read the same
 * way: no inline flags (hence [Bb][Ee]...), no `.` or `$` (Java's `$` also matches before a final
 * line terminator, and its `.` excludes more line terminators than JavaScript's), no lookbehind,
 * no \s or \w on their own; `^` without multiline is the start of input in both, and
 * `(?![\s\S])` the true end of input in both.
 */
const START = '^'
const END = '(?![\\s\\S])'
const SCHEME = '[Bb][Ee][Aa][Rr][Ee][Rr]'
const MAX_SEPARATOR_SPACES = 16
const SEPARATOR = ` {1,${MAX_SEPARATOR_SPACES}}`
const TOKEN_CHARACTER = '[A-Za-z0-9._~+/-]'
const MIN_KEY_LENGTH = 20
/** The longest key value, padding included (API Gateway's limit). */
export const MAX_KEY_LENGTH = 128
const MAX_PADDING = 2
/** Any RFC 6750 b64token: what parseBearerToken returns (whether it is a key is a second question). */
const B64TOKEN = `${TOKEN_CHARACTER}+=*`
/**
 * An API key, up to the end of input: the lookahead caps the total (padding included) at 128, the
 * rest needs 20 characters before any padding.
 */
const API_KEY = `(?![\\s\\S]{${MAX_KEY_LENGTH + 1}})${TOKEN_CHARACTER}{${MIN_KEY_LENGTH},${MAX_KEY_LENGTH}}={0,${MAX_PADDING}}`

/** The longest header the grammar accepts; anything longer is refused before any regex runs. */
export const MAX_AUTHORIZATION_LENGTH = 'Bearer'.length + MAX_SEPARATOR_SPACES + MAX_KEY_LENGTH

const BEARER_HEADER = new RegExp(`${START}${SCHEME}${SEPARATOR}(${B64TOKEN})${END}`)
const WELL_FORMED_API_KEY = new RegExp(`${START}${API_KEY}${END}`)

/** The bearer token of an `Authorization` header value; undefined (never an exception) otherwise. */
export const parseBearerToken = (header: string | undefined | null): string | undefined => {
  if (typeof header !== 'string' || header.length > MAX_AUTHORIZATION_LENGTH) return undefined
  return BEARER_HEADER.exec(header)?.[1]
}

/** Whether a key value fits the grammar: one API Gateway accepts that can travel as a bearer token. */
export const isWellFormedApiKey = (key: string): boolean => WELL_FORMED_API_KEY.test(key)

/**
 * The TOKEN authorizer's validation expression (API Gateway's identityValidationExpression):
 * a header that does not match is answered 401 by the gateway without invoking the authorizer,
 * so malformed tokens cost no Lambda call. It accepts exactly the headers that parseBearerToken
 * and isWellFormedApiKey accept together, under either engine.
 */
export const BEARER_TOKEN_VALIDATION_PATTERN = `${START}${SCHEME}${SEPARATOR}${API_KEY}${END}`

/**
 * The exact error message a TOKEN authorizer throws for API Gateway to answer 401 (its
 * UNAUTHORIZED gateway response); any other error becomes a 500. The local gateway and the
 * authorizer metrics read it too.
 */
export const UNAUTHORIZED = 'Unauthorized'

/** RFC 6750 challenge sent with every 401, by the local gateway and the deployed gateway responses. */
export const BEARER_CHALLENGE = 'Bearer realm="petstore"'
