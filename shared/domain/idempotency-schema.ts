import * as z from 'zod/mini'

/**
 * Idempotent creation (docs/api.md, "Idempotent creation"): the request header a client sends
 * on POST /pets, the header that marks a replayed answer, and how long a key is remembered.
 * One place for the names: the handler, the OpenAPI document and the tests read them here.
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed'
export const IDEMPOTENCY_WINDOW_SECONDS = 24 * 60 * 60

/** 1..255 visible ASCII characters (RFC 5234 VCHAR, %x21-7E): no spaces, no control characters. */
export const IdempotencyKeySchema = z
  .string()
  .check(z.regex(/^[\x21-\x7E]{1,255}$/, { error: 'must be 1 to 255 visible ASCII characters' }))

/** The request headers createPet reads, by their canonical names (looked up case-insensitively). */
export const CreatePetHeadersSchema = z.object({
  [IDEMPOTENCY_KEY_HEADER]: z.optional(IdempotencyKeySchema),
})
