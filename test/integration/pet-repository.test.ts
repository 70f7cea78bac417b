import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { INT64_MAX, INT64_MIN } from '#shared/domain/int64.ts'
import type { Pet } from '#shared/domain/pet-schema.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'

let env: DynamoTestEnv
const repositoryWith = (blockSize: number) =>
  new PetRepository({
    client: env.documentClient,
    tableName: env.petTable,
    ids: new BlockIdAllocator({ client: env.documentClient, tableName: env.petTable, blockSize }),
  })

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

const collect = async (repository: PetRepository, limit: number, status?: Pet['status']) => {
  const seen: Pet[] = []
  let afterId: number | undefined
  let pages = 0
  do {
    const page = await repository.list({ limit, status, afterId })
    expect(page.pets.length).toBeLessThanOrEqual(limit)
    seen.push(...page.pets)
    afterId = page.lastId
    pages += 1
  } while (afterId !== undefined)
  return { seen, pages }
}

describe('PetRepository against DynamoDB', () => {
  it('gives 200 concurrent creates from several allocators 200 distinct ids, all readable', async () => {
    const repositories = [
      repositoryWith(7),
      repositoryWith(7),
      repositoryWith(13),
      repositoryWith(1),
    ]
    const created = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        (repositories[i % repositories.length] as PetRepository).create({
          name: `pet ${i}`,
          categoryId: BigInt(i),
        }),
      ),
    )
    const ids = new Set(created.map((pet) => pet.id))
    expect(ids.size).toBe(200)
    for (const id of ids) expect(id).toBeGreaterThan(0)
    const read = await Promise.all(created.map((pet) => repositories[0]?.get(pet.id)))
    expect(read).toEqual(created)
  })

  it('pages through several hundred pets, unfiltered and by status, visiting each exactly once', async () => {
    const repository = repositoryWith(50)
    const statuses = ['available', 'pending', 'sold', undefined] as const
    const created: Pet[] = []
    for (let i = 0; i < 360; i += 10) {
      created.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, (_, j) => {
            const status = statuses[(i + j) % 4]
            return repository.create({
              name: `page pet ${i + j}`,
              categoryId: 1n,
              ...(status ? { status } : {}),
            })
          }),
        )),
      )
    }
    const createdIds = new Set(created.map((pet) => pet.id))

    const all = await collect(repository, 37)
    const listedIds = all.seen.map((pet) => pet.id).filter((id) => createdIds.has(id))
    expect(new Set(listedIds).size).toBe(listedIds.length)
    expect(listedIds.length).toBe(360)

    const pending = await collect(repository, 25, 'pending')
    const pendingIds = pending.seen.map((pet) => pet.id).filter((id) => createdIds.has(id))
    expect(pendingIds).toEqual(
      created
        .filter((pet) => pet.status === 'pending')
        .map((pet) => pet.id)
        .sort((a, b) => a - b),
    )
    expect(pending.seen.filter((pet) => pet.status !== 'pending')).toEqual([])
    const allPendingIds = pending.seen.map((pet) => pet.id)
    expect(allPendingIds).toEqual([...allPendingIds].sort((a, b) => a - b))
  })

  it('ends on a full last page without a cursor to an empty page', async () => {
    const repository = repositoryWith(5)
    for (let i = 0; i < 4; i += 1)
      await repository.create({ name: 'sold one', categoryId: 2n, status: 'sold' })
    const { seen } = await collect(repository, 1000, 'sold')
    const exact = await repository.list({ limit: seen.length, status: 'sold' })
    expect(exact.pets.length).toBe(seen.length)
    expect(exact.lastId).toBeUndefined()
  })

  it('round-trips int64 extremes exactly', async () => {
    const repository = repositoryWith(2)
    for (const categoryId of [INT64_MAX, INT64_MIN, 0n, 9007199254740993n]) {
      const pet = await repository.create({ name: 'big', categoryId })
      expect((await repository.get(pet.id))?.categoryId).toBe(categoryId)
    }
  })

  it('reports a missing pet as undefined', async () => {
    expect(await repositoryWith(1).get(987654321)).toBeUndefined()
  })
})
