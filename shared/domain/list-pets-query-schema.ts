import * as z from 'zod/mini'
import { PetStatusSchema } from './pet-schema.ts'

// listPets' query (docs/api.md, "Pagination").

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
