import * as z from 'zod/mini'

/**
 * The pet resource (docs/api.md, "Pets and validation").
 * These schemas, and each operation's own input schema beside them (new-pet-schema.ts,
 * list-pets-query-schema.ts, pet-path-schema.ts), are the single source of the types, the request
 * validation and the OpenAPI document's pet schemas (openapi/openapi-document.ts). They use zod's
 * tree-shakable "mini" API: the classic API would add about 435 KB to every function bundle
 * (measured with esbuild), the functional one about 20 KB. One module per operation's input, so
 * a function bundles, and builds at its cold start, only the schemas it uses: esbuild keeps every
 * schema of a module it imports, since it cannot know zod's calls are free of side effects.
 */

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
// zod/mini has no default messages: without one, a wrong value would only be "Invalid input".
export const PetStatusSchema = z.enum(PET_STATUSES, {
  error: `must be one of ${PET_STATUSES.join(', ')}`,
})
export type PetStatus = z.infer<typeof PetStatusSchema>

/** Ids are assigned by the service: positive and below 2^53 so every JSON client reads them exactly. */
export const PetIdSchema = z.int().check(z.positive(), z.lte(Number.MAX_SAFE_INTEGER))

export const PetSchema = z.object({
  id: PetIdSchema,
  name: z.string(),
  categoryId: z.bigint(),
  status: z.optional(PetStatusSchema),
})
export type Pet = z.output<typeof PetSchema>
