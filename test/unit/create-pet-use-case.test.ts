import { describe, expect, it, vi } from 'vitest'
import {
  type CreatePetPorts,
  type CreatePetRequest,
  createPet,
} from '#functions/create-pet/create-pet-use-case.ts'
import type { IdempotencyClaim } from '#shared/data/idempotency-repository.ts'
import { IDEMPOTENT_REPLAYED_HEADER } from '#shared/domain/idempotency-schema.ts'
import type { NewPet } from '#shared/domain/new-pet-schema.ts'
import type { Pet } from '#shared/domain/pet-schema.ts'

/**
 * The createPet use case on in-memory ports: which calls each course makes and what it answers.
 * DynamoDB's side of the same courses (conditions, lost answers, leases) is in
 * test/integration/idempotent-create.test.ts.
 */
const NEW_PET: NewPet = { name: 'Rex', categoryId: 9_223_372_036_854_775_807n }
const location = (id: number) => `https://api.example.com/v1/pets/${id}`
const IDEMPOTENCY = { scope: 'key-1', key: 'order-42', leaseMs: 9_000 }

const ports = (
  claim: IdempotencyClaim = { kind: 'claimed', recordKey: 'r1', petId: 7, takeover: false },
) => {
  const pets = {
    create: vi.fn(async (newPet: NewPet): Promise<Pet> => ({ id: 1, ...newPet })),
    allocateId: vi.fn(async () => 7),
    insert: vi.fn(async (_pet: Pet): Promise<'written' | 'exists'> => 'written'),
  }
  const idempotency = {
    claim: vi.fn(async () => claim),
    complete: vi.fn(async () => undefined),
    release: vi.fn(async () => undefined),
  }
  return { pets, idempotency } satisfies CreatePetPorts
}

const request = (extra: Partial<CreatePetRequest> = {}): CreatePetRequest => ({
  newPet: NEW_PET,
  location,
  ...extra,
})

describe('createPet without an Idempotency-Key', () => {
  it('puts the pet under a fresh id and answers 201 with it and its Location', async () => {
    // Prepare
    const deps = ports()

    // Act
    const response = await createPet(deps, request())

    // Assess
    expect(deps.pets.create).toHaveBeenCalledWith(NEW_PET)
    expect(response).toMatchObject({ statusCode: 201, headers: { Location: location(1) } })
    expect(response.body).toBe('{"id":1,"name":"Rex","categoryId":9223372036854775807}')
    expect(deps.idempotency.claim).not.toHaveBeenCalled()
  })
})

describe('createPet with an Idempotency-Key', () => {
  it('claims the key with a reserved id, puts the pet under it and stores the 201', async () => {
    // Prepare
    const deps = ports()

    // Act
    const response = await createPet(deps, request({ idempotency: IDEMPOTENCY }))

    // Assess
    expect(deps.idempotency.claim).toHaveBeenCalledWith(
      expect.objectContaining({
        scope: 'key-1',
        idempotencyKey: 'order-42',
        petId: 7,
        leaseMs: 9_000,
      }),
    )
    expect(deps.pets.insert).toHaveBeenCalledWith({ id: 7, ...NEW_PET })
    expect(deps.idempotency.complete).toHaveBeenCalledWith('r1', 7, response.body)
    expect(response).toMatchObject({ statusCode: 201, headers: { Location: location(7) } })
  })

  it('replays the stored 201 for a repeat, writing nothing', async () => {
    // Prepare
    const deps = ports({ kind: 'replay', petId: 3, response: '{"id":3}' })

    // Act
    const response = await createPet(deps, request({ idempotency: IDEMPOTENCY }))

    // Assess
    expect(response).toMatchObject({
      statusCode: 201,
      headers: { Location: location(3), [IDEMPOTENT_REPLAYED_HEADER]: 'true' },
      body: '{"id":3}',
    })
    expect(deps.pets.insert).not.toHaveBeenCalled()
  })

  it('refuses another body under the same key with idempotency_key_reused', async () => {
    // Prepare
    const deps = ports({ kind: 'mismatch' })

    // Act & Assess
    await expect(createPet(deps, request({ idempotency: IDEMPOTENCY }))).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    })
    expect(deps.pets.insert).not.toHaveBeenCalled()
  })

  it('tells the client to wait while another attempt holds the key', async () => {
    // Prepare
    const deps = ports({ kind: 'in_progress', retryAfterMs: 2_500 })

    // Act & Assess
    await expect(createPet(deps, request({ idempotency: IDEMPOTENCY }))).rejects.toMatchObject({
      code: 'idempotency_in_progress',
      headers: { 'Retry-After': '3' },
    })
  })

  it('releases its claim when the put fails, and fails with the put’s error', async () => {
    // Prepare
    const deps = ports()
    const failure = new Error('put failed')
    deps.pets.insert.mockRejectedValueOnce(failure)

    // Act & Assess
    await expect(createPet(deps, request({ idempotency: IDEMPOTENCY }))).rejects.toBe(failure)
    expect(deps.idempotency.release).toHaveBeenCalledWith('r1', 7)
    expect(deps.idempotency.complete).not.toHaveBeenCalled()
  })
})
