import type { Request } from '@middy/core'
import type { ApiMiddleware } from '#shared/http/http-types.ts'

/**
 * Headers that belong on every response, success or error (rate-limit, deprecation), are
 * collected in the request and merged last, whichever way the response was made.
 */

interface HeaderBag {
  responseHeaders?: Record<string, string>
}

const bagOf = (request: Pick<Request, 'internal'>): HeaderBag => request.internal as HeaderBag

export const addResponseHeaders = (
  request: Pick<Request, 'internal'>,
  headers: Record<string, string>,
): void => {
  const bag = bagOf(request)
  bag.responseHeaders = { ...bag.responseHeaders, ...headers }
}

/** Register first, so its after/onError run last. `always`: headers of every answer (CORS). */
export const responseHeadersMiddleware = (
  always: Record<string, string> = {},
): ApiMiddleware<never> => {
  const mergeHeaders = (request: Request): void => {
    const headers = bagOf(request).responseHeaders
    const response = request.response as { headers?: Record<string, string> } | undefined
    if (!response) return
    response.headers = { ...response.headers, ...always, ...headers }
  }
  return { after: mergeHeaders, onError: mergeHeaders }
}
