import * as z from 'zod/mini'
import { StoreKeyItemSchema } from '#shared/data/store-key-item.ts'
import type { StoreKeyRepository } from './store-key-repository.ts'

/**
 * The keys CLI's calls on the store key table, as one request each: what the local control plane
 * serves at STORE_KEYS_PATH (on a deployed stage the CLI calls DynamoDB with the operator's
 * credentials instead). Both sides run the same StoreKeyRepository.
 */
export const STORE_KEYS_PATH = '/_local/store-keys'
/** The local stage's MAC secrets, for the keys CLI to make keys with (behind the control secret). */
export const KEY_MAC_PATH = '/_local/key-mac'

const keyId = z.string().check(z.regex(/^s-[a-z0-9]{10}$/))
const plan = z.object({
  plan: StoreKeyItemSchema.shape.plan,
  perMinute: z.int().check(z.positive()),
  perDay: z.int().check(z.positive()),
  customer: z.optional(z.string()),
})

export const storeKeyRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('put'), item: StoreKeyItemSchema }),
  z.object({ op: z.literal('get'), keyId }),
  z.object({
    op: z.literal('change'),
    keyId,
    change: z.object({
      enabled: z.optional(z.boolean()),
      plan: z.optional(plan),
      disableAfter: z.optional(z.nullable(z.iso.datetime())),
    }),
  }),
  z.object({ op: z.literal('delete'), keyId }),
  z.object({
    op: z.literal('page'),
    limit: z.int().check(z.minimum(1), z.maximum(1_000)),
    after: z.optional(keyId),
    plan: z.optional(z.string()),
  }),
])
export type StoreKeyRequest = z.infer<typeof storeKeyRequestSchema>

/** What the CLI needs of the repository, wherever it runs. */
export type StoreKeyStore = Pick<StoreKeyRepository, 'put' | 'get' | 'change' | 'delete' | 'page'>

/** Runs one request against the repository; the answer is plain JSON (`null` for nothing). */
export const answerStoreKeyRequest = async (
  repository: StoreKeyStore,
  request: StoreKeyRequest,
): Promise<unknown> => {
  switch (request.op) {
    case 'put':
      return { done: await repository.put(request.item).then(() => true) }
    case 'get':
      return { item: (await repository.get(request.keyId)) ?? null }
    case 'change':
      return { item: await repository.change(request.keyId, request.change) }
    case 'delete':
      return { existed: await repository.delete(request.keyId) }
    case 'page':
      return repository.page(request)
  }
}
