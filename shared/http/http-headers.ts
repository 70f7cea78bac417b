import type { APIGatewayProxyEvent } from 'aws-lambda'

/** API Gateway REST events keep the client's header case; HTTP header names are not case sensitive. */
export const getHeader = (
  event: Pick<APIGatewayProxyEvent, 'headers'>,
  name: string,
): string | undefined => {
  const headers = event.headers ?? {}
  const direct = headers[name]
  if (direct !== undefined) return direct
  const wanted = name.toLowerCase()
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && value !== undefined) return value
  }
  return undefined
}

/**
 * The address the client called, up to and including the API version segment, e.g.
 * `https://abc.execute-api.eu-west-1.amazonaws.com/production/v1` or `http://127.0.0.1:3000/v1`.
 * requestContext.path is the path as the client sent it (stage prefix included on the
 * execute-api host, base path on a custom domain), so links work behind either.
 */
export const baseUrlOf = (event: APIGatewayProxyEvent): string => {
  const proto = getHeader(event, 'X-Forwarded-Proto') ?? 'https'
  const host = getHeader(event, 'Host') ?? 'localhost'
  const path = event.requestContext?.path ?? event.path
  const versionAt = path.indexOf('/v1/')
  const prefix = versionAt >= 0 ? path.slice(0, versionAt + 3) : '/v1'
  return `${proto}://${host}${prefix}`
}
