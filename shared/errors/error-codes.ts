/**
 * Every error code the API can answer with, and its HTTP status (docs/api.md, "Errors").
 * One table: the error middleware, the local gateway, the CDK gateway responses and the OpenAPI
 * document (the Error schema's code enum, each operation's error answers) read it.
 */
export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  pet_not_found: 404,
  route_not_found: 404,
  idempotency_in_progress: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  key_suspended: 429,
  too_many_failed_auths: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

/** Default, client-safe messages; callers may give a more specific one. */
export const ERROR_MESSAGES: Record<ErrorCode, string> = {
  invalid_json: 'The request body is not a valid JSON object.',
  validation_failed: 'The request has invalid values.',
  unauthorized: 'A valid API key is required: send it as "Authorization: Bearer <key>".',
  pet_not_found: 'No pet exists with that id.',
  route_not_found: 'No such route.',
  idempotency_in_progress: 'A request with this Idempotency-Key is still in progress.',
  gone: 'This operation has been removed.',
  payload_too_large: 'The request body is larger than 16 KiB.',
  unsupported_media_type: 'The request body must be sent as application/json.',
  idempotency_key_reused: 'This Idempotency-Key was used with a different request body.',
  rate_limited: 'Too many requests in this minute.',
  quota_exceeded: 'The daily request quota is used up.',
  key_suspended: 'This API key is temporarily suspended after repeated rate-limit violations.',
  too_many_failed_auths:
    'Too many requests without a valid API key from this address; retry later. Requests with a valid key are not affected.',
  internal_error: 'An unexpected error occurred.',
  service_unavailable: 'The service is temporarily unavailable; retry later.',
}
