import { randomBytes, randomUUID } from 'node:crypto'
import { DOCUMENTED_OPERATIONS, operationIdOf } from '#openapi/contract-validator.ts'
import type { Pet, PetstoreClient } from '#openapi/petstore-client.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { OperationId } from '#shared/config/routes-config.ts'
import { expectStatus, lockoutAdvice, lockoutOf } from './smoke-key-checks.ts'
import type { SmokeRecorder } from './smoke-recorder.ts'

const UNUSED_PET_ID = Number.MAX_SAFE_INTEGER

const unknownKey = () => `smoke-unknown-${randomBytes(16).toString('hex')}`

const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
]

/**
 * One call per operation of the route table, in the order of the map (getPet reads the pet created
 * or listed before it): a pet created and read back when the run may write, otherwise reads and a
 * create the API refuses.
 */
export const smokeOperations = (
  client: PetstoreClient,
  { answers, answered, errorCodeOf }: SmokeRecorder,
  writes: boolean,
  name: string,
) => {
  let pet: Pet | undefined
  return writes
    ? ({
        createPet: async () => {
          pet = await client.createPet({ name, categoryId: 9_007_199_254_740_991 })
          const response = answered(201, 'POST /pets')
          if (pet.name !== name) throw new Error('the pet came back with another name')
          if (!response.headers.get('location')?.endsWith(`/pets/${pet.id}`)) {
            throw new Error('no Location naming the new pet')
          }
          return `201, pet ${pet.id} with its Location`
        },
        getPet: async () => {
          if (!pet) throw new Error('no pet was created')
          const fetched = await client.getPet(pet.id)
          answered(200, `GET /pets/${pet.id}`)
          if (JSON.stringify(fetched) !== JSON.stringify(pet))
            throw new Error('another pet came back')
          return `200, the same pet`
        },
        listPets: async () => {
          const page = await client.listPets({ limit: 2 })
          answered(200, 'GET /pets')
          return `200, ${page.pets.length} pet(s)${page.nextCursor ? ' and a next page' : ''}`
        },
      } satisfies Record<OperationId, () => Promise<string>>)
    : ({
        listPets: async () => {
          const page = await client.listPets({ limit: 2 })
          answered(200, 'GET /pets')
          pet = page.pets[0]
          return `200, ${page.pets.length} pet(s)${page.nextCursor ? ' and a next page' : ''}`
        },
        getPet: async () => {
          // Other clients write meanwhile: the pet listed may have changed since (only its id
          // is compared) or gone (404: listed again, once).
          let listed = pet
          for (let attempt = 1; listed; attempt += 1) {
            const fetched = await client.getPet(listed.id).catch(() => undefined)
            if (attempt === 1 && answers.at(-1)?.response.status === 404) {
              listed = (await client.listPets({ limit: 1 })).pets[0]
              continue
            }
            answered(200, `GET /pets/${listed.id}`)
            if (fetched?.id !== listed.id)
              throw new Error('another pet came back than the one listed')
            break
          }
          await client.getPet(UNUSED_PET_ID).catch(() => undefined)
          answered(404, `GET /pets/${UNUSED_PET_ID}`)
          const code = errorCodeOf(`GET /pets/${UNUSED_PET_ID}`)
          if (code !== 'pet_not_found') throw new Error(`a 404 with code ${code}`)
          return `${listed ? `200, the pet listed; ` : ''}404 pet_not_found for an id nobody has`
        },
        createPet: async () => {
          // A name the API refuses: the operation answers, nothing is written.
          await client.raw.POST('/pets', {
            body: { name: '', categoryId: 1 },
            params: { header: { 'Idempotency-Key': randomUUID() } },
          })
          answered(400, 'POST /pets with an empty name')
          const code = errorCodeOf('POST /pets with an empty name')
          if (code !== 'validation_failed') throw new Error(`a 400 with code ${code}`)
          return '400 validation_failed for an empty name, nothing written'
        },
      } satisfies Record<OperationId, () => Promise<string>>)
}

/** Every operation of openapi/openapi.json was called during the run. */
export const everyOperationAnswered = async ({ answers }: SmokeRecorder) => {
  const called = new Set(
    answers.map(({ response }) => operationIdOf(response.method, response.url)),
  )
  const missing = DOCUMENTED_OPERATIONS.filter((operation) => !called.has(operation))
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(', ')} of openapi/openapi.json never called: add a call to ops/smoke/smoke-operations.ts`,
    )
  }
  return `all ${DOCUMENTED_OPERATIONS.length} operations of openapi/openapi.json answered`
}

/** Every keyed answer carries the rate-limit headers, and the policy is the key's plan. */
export const rateLimitHeadersShown = async (
  { answers }: SmokeRecorder,
  limits: PlanLimits | undefined,
) => {
  const keyed = answers
    .map(({ response }) => response)
    .filter((response) => response.status !== 401)
  for (const response of keyed) {
    const missing = RATE_LIMIT_HEADERS.filter((header) => !response.headers.has(header))
    if (missing.length > 0) {
      throw new Error(
        `${response.method} ${response.url} (${response.status}) lacks ${missing.join(', ')}`,
      )
    }
  }
  const last = keyed.at(-1)
  const policy = last?.headers.get('ratelimit-policy') ?? ''
  if (limits) {
    const expected = `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`
    if (policy !== expected) throw new Error(`RateLimit-Policy is ${policy}, expected ${expected}`)
  }
  const remaining = keyed.map((response) => Number(response.headers.get('x-ratelimit-remaining')))
  return `on all ${keyed.length} keyed answers; policy ${policy}; remaining ${remaining.join(', ')}`
}

/** An unknown key and no key get 401 with an Error body and no rate-limit headers. */
export const unauthorizedRefused = async ({ answers, raw }: SmokeRecorder) => {
  const from = answers.length
  for (const authorization of [`Bearer ${unknownKey()}`, undefined]) {
    await (await raw('/pets', authorization)).arrayBuffer()
  }
  for (const { response } of answers.slice(from)) {
    const locked = lockoutOf(response)
    if (locked !== undefined) throw new Error(lockoutAdvice(locked))
    expectStatus(response, 401, 'GET /pets with an unknown key or none')
    if (RATE_LIMIT_HEADERS.some((header) => response.headers.has(header))) {
      throw new Error('a 401 carries rate-limit headers')
    }
    const { code } = JSON.parse(response.text) as { code?: string }
    if (code !== 'unauthorized') throw new Error(`a 401 with code ${code}`)
  }
  return 'for an unknown key and for none, Error bodies, no rate-limit headers'
}
