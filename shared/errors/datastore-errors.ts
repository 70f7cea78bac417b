/**
 * Failures of the datastore that a retry may cure: throttling, DynamoDB's own 5xx, timeouts and
 * lost connections. They become 503 service_unavailable with Retry-After, not 500.
 */
const UNAVAILABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'LimitExceededException',
  'TimeoutError',
])

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
])

export const isDatastoreUnavailable = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false
  const { name, code, $metadata } = error as {
    name?: unknown
    code?: unknown
    $metadata?: { httpStatusCode?: number }
  }
  if (typeof name === 'string' && UNAVAILABLE_NAMES.has(name)) return true
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true
  const status = $metadata?.httpStatusCode
  return typeof status === 'number' && status >= 500
}
