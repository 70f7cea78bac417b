import * as z from 'zod/mini'
import { INT64_MAX } from './int64.ts'

/** getPet's path: the pet id, an int64 written in decimal. */
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
