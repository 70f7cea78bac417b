import * as z from 'zod/mini'

/**
 * The pet resource (docs/api.md, "Pets and validation").
 * These schemas are the single source of the types, the request validation and the OpenAPI
 * document's pet schemas (openapi/openapi-document.ts). They use zod's tree-shakable "mini" API:
 * the classic API would add about 435 KB to every function bundle (measured with esbuild), the
 * functional one about 20 KB.
 */

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
// zod/mini has no default messages: without one, a wrong value would only be "Invalid input".
export const PetStatusSchema = z.enum(PET_STATUSES, {
  error: `must be one of ${PET_STATUSES.join(', ')}`,
})
export type PetStatus = z.infer<typeof PetStatusSchema>

/** zod's default messages say "expected string, received undefined" for a missing member. */
const requiredOr =
  (message: string) =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? 'is required' : message

/**
 * int64 kept exactly: small integers arrive as numbers, large ones as BigInt (see json-codec).
 * Fractions, unsafe doubles (1e30) and anything outside int64 are rejected.
 */
export const Int64Schema = z
  .pipe(
    z.union(
      [
        // Unsafe doubles (1e30, or a large literal with a fraction) cannot be kept exactly.
        z.int({ error: 'must be an exact integer within the int64 range' }),
        z.bigint(),
      ],
      { error: requiredOr('must be an integer') },
    ),
    z.transform((value: number | bigint) => BigInt(value)),
  )
  .check(
    z.refine((value: bigint) => value >= INT64_MIN && value <= INT64_MAX, {
      error: 'must be within the int64 range',
    }),
  )

export const PetNameSchema = z.string({ error: requiredOr('must be a string') }).check(
  z.maxLength(200, { error: 'must be at most 200 characters' }),
  z.refine((value) => value.trim().length > 0, {
    error: 'must contain a non-whitespace character',
  }),
)

export const NewPetSchema = z.strictObject({
  name: PetNameSchema,
  categoryId: Int64Schema,
  status: z.optional(PetStatusSchema),
})
export type NewPet = z.output<typeof NewPetSchema>

/** Ids are assigned by the service: positive and below 2^53 so every JSON client reads them exactly. */
export const PetIdSchema = z.int().check(z.positive(), z.lte(Number.MAX_SAFE_INTEGER))

export const PetSchema = z.object({
  id: PetIdSchema,
  name: z.string(),
  categoryId: z.bigint(),
  status: z.optional(PetStatusSchema),
})
export type Pet = z.output<typeof PetSchema>

/** A query value as API Gateway hands it over: a string, or an array when the parameter is repeated. */
const once = <Output>(schema: z.ZodMiniType<Output, string>) =>
  z.pipe(z.string({ error: 'must be given once' }), schema)

export const LIMIT_DEFAULT = 20
export const LIMIT_MAX = 100
const LIMIT_MESSAGE = `must be an integer from 1 to ${LIMIT_MAX}`
/** Cursors the service hands out are far shorter: a longer one was not one of them. */
const CURSOR_MAX_LENGTH = 1024
const CURSOR_MESSAGE = `must be the X-Next-Cursor of a previous page, as given (1 to ${CURSOR_MAX_LENGTH} characters)`

export const ListPetsQuerySchema = z.object({
  limit: z._default(
    once(
      z.pipe(
        z.pipe(z.string().check(z.regex(/^\d+$/, { error: LIMIT_MESSAGE })), z.transform(Number)),
        z
          .int()
          .check(z.gte(1, { error: LIMIT_MESSAGE }), z.lte(LIMIT_MAX, { error: LIMIT_MESSAGE })),
      ),
    ),
    LIMIT_DEFAULT,
  ),
  status: z.optional(once(PetStatusSchema)),
  cursor: z.optional(
    once(
      z
        .string()
        .check(
          z.minLength(1, { error: CURSOR_MESSAGE }),
          z.maxLength(CURSOR_MAX_LENGTH, { error: CURSOR_MESSAGE }),
        ),
    ),
  ),
})

export const PetPathSchema = z.object({
  petId: z.pipe(
    z.pipe(
      z.pipe(
        z.string().check(z.regex(/^\d+$/, { error: 'must be a positive integer' })),
        z.transform((text: string) => BigInt(text)),
      ),
      // The path is int64: a larger value is invalid, not merely unknown.
      z
        .bigint()
        .check(
          z.gte(1n, { error: 'must be a positive integer' }),
          z.lte(INT64_MAX, { error: 'must be within the int64 range' }),
        ),
    ),
    z.transform(Number),
  ),
})
