import * as z from 'zod/mini'
import { INT64_MAX, INT64_MIN } from './int64.ts'
import { PetStatusSchema } from './pet-schema.ts'

// createPet's body (docs/api.md, "Pets and validation").

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
