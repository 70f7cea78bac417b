import createClient from 'openapi-fetch'
import type { components, paths } from './openapi-types.ts'

export type Pet = components['schemas']['Pet']
export type NewPet = components['schemas']['NewPet']
export type PetStatus = components['schemas']['PetStatus']

/**
 * An example client: typed end to end by the types openapi-typescript generates from
 * openapi/openapi.json, calls made by openapi-fetch. Paths, parameters, bodies and answers are
 * checked by the compiler against the published contract.
 */
export const petstoreClient = (
  baseUrl: string,
  apiKey: string,
  options: { fetch?: typeof globalThis.fetch } = {},
) => {
  const client = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  return {
    /** createPet; give an idempotencyKey to make retries safe. */
    createPet: (pet: NewPet, idempotencyKey?: string) =>
      client.POST('/pets', {
        body: pet,
        params: { header: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {} },
      }),
    getPet: (petId: number) => client.GET('/pets/{petId}', { params: { path: { petId } } }),
    /** Every pet with this status, following `X-Next-Cursor` page by page. */
    async *listAll(status?: PetStatus, limit = 100): AsyncGenerator<Pet> {
      let cursor: string | undefined
      do {
        const { data, error, response } = await client.GET('/pets', {
          params: {
            query: { limit, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) },
          },
        })
        if (error) throw new Error(`${error.code}: ${error.message}`)
        yield* data
        cursor = response.headers.get('X-Next-Cursor') ?? undefined
      } while (cursor)
    },
  }
}
