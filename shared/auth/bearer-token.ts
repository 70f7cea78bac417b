/**
 * Reads `Authorization: Bearer <key>` (RFC 6750). The scheme is case-insensitive (RFC 9110),
 * one or more spaces may separate it from the token, and surrounding white space is ignored.
 * Anything else, including an oversized header, yields undefined, never an exception.
 */
export const MAX_AUTHORIZATION_LENGTH = 512

const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i

export const parseBearerToken = (header: string | undefined | null): string | undefined => {
  if (typeof header !== 'string' || header.length > MAX_AUTHORIZATION_LENGTH) return undefined
  return BEARER.exec(header.trim())?.[1]
}

/**
 * API key values: what API Gateway accepts (20 to 128 characters) that can also travel as a
 * bearer token, so '=' only as trailing padding (a key with '=' inside could never authenticate).
 */
export const API_KEY_PATTERN = /^(?=.{20,128}$)[A-Za-z0-9\-._~+/]+=*$/

export const isWellFormedApiKey = (key: string): boolean => API_KEY_PATTERN.test(key)

/**
 * The TOKEN authorizer's validation expression (API Gateway's identityValidationExpression):
 * a header that does not match is answered 401 by the gateway without invoking the authorizer,
 * so malformed tokens cost no Lambda call. It accepts exactly the headers that parseBearerToken
 * and isWellFormedApiKey accept together (a header is trimmed by HTTP parsing before either
 * sees it). Written without inline flags or lookbehind so API Gateway's engine and JavaScript's
 * RegExp (the local gateway) read it the same way.
 */
export const BEARER_TOKEN_VALIDATION_PATTERN =
  '^[Bb][Ee][Aa][Rr][Ee][Rr] +(?=[A-Za-z0-9._~+/=-]{20,128}$)[A-Za-z0-9._~+/-]+=*$'

/**
 * The exact error message a TOKEN authorizer throws for API Gateway to answer 401 (its
 * UNAUTHORIZED gateway response); any other error becomes a 500. The local gateway and the
 * authorizer metrics read it too.
 */
export const UNAUTHORIZED = 'Unauthorized'

/** RFC 6750 challenge sent with every 401, by the local gateway and the deployed gateway responses. */
export const BEARER_CHALLENGE = 'Bearer realm="petstore"'
