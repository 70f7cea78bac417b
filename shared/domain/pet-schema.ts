import { z } from 'zod'

/**
 * The pet resource (interface section 2, decisions.md "Pets and validation").
 * These schemas are the single source of truth for types, request validation and the
 * OpenAPI document.
 */

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export const PetStatusSchema = z.enum(PET_STATUSES)
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
  .union(
    [
      // Unsafe doubles (1e30, or a large literal with a fraction) cannot be kept exactly.
      z.int({ error: 'must be an exact integer within the int64 range' }),
      z.bigint(),
    ],
    { error: requiredOr('must be an integer') },
  )
  .transform((value) => BigInt(value))
  .refine((value) => value >= INT64_MIN && value <= INT64_MAX, {
    message: 'must be within the int64 range',
  })

export const PetNameSchema = z
  .string({ error: requiredOr('must be a string') })
  .max(200, { error: 'must be at most 200 characters' })
  .refine((value) => value.trim().length > 0, {
    message: 'must contain a non-whitespace character',
  })

export const NewPetSchema = z.strictObject({
  name: PetNameSchema,
  categoryId: Int64Schema,
  status: PetStatusSchema.optional(),
})
export type NewPet = z.output<typeof NewPetSchema>

/** Ids are assigned by the service: positive and below 2^53 so every JSON client reads them exactly. */
export const PetIdSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER)

export const PetSchema = z.object({
  id: PetIdSchema,
  name: z.string(),
  categoryId: z.bigint(),
  status: PetStatusSchema.optional(),
})
export type Pet = z.output<typeof PetSchema>

export const PetsSchema = z.array(PetSchema)

/** A query value as API Gateway hands it over: a string, or an array when the parameter is repeated. */
const once = <Output>(schema: z.ZodType<Output, string>) =>
  z.string({ error: 'must be given once' }).pipe(schema)

export const LIMIT_DEFAULT = 20
export const LIMIT_MAX = 100
const LIMIT_MESSAGE = `must be an integer from 1 to ${LIMIT_MAX}`

export const ListPetsQuerySchema = z.object({
  limit: once(
    z
      .string()
      .regex(/^\d+$/, { error: LIMIT_MESSAGE })
      .transform(Number)
      .pipe(
        z.number().int().min(1, { error: LIMIT_MESSAGE }).max(LIMIT_MAX, { error: LIMIT_MESSAGE }),
      ),
  ).default(LIMIT_DEFAULT),
  status: once(PetStatusSchema).optional(),
  cursor: once(z.string().min(1).max(1024)).optional(),
})
export type ListPetsQuery = z.output<typeof ListPetsQuerySchema>

export const PetPathSchema = z.object({
  petId: z
    .string()
    .regex(/^\d+$/, { error: 'must be a positive integer' })
    .transform((text) => BigInt(text))
    // The path is int64: a larger value is invalid, not merely unknown.
    .pipe(
      z
        .bigint()
        .min(1n, { error: 'must be a positive integer' })
        .max(INT64_MAX, { error: 'must be within the int64 range' }),
    )
    .transform(Number),
})
export type PetPath = z.output<typeof PetPathSchema>
