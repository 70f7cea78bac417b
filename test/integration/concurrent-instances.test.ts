import { ScanCommand } from '@aws-sdk/lib-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCreatePetHandler } from '#functions/create-pet/create-pet-handler.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { PET_TABLE } from '#shared/data/table-schema.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

/**
 * Several Lambda instances at once: independently built createPet handlers (each its own SDK
 * client and id allocator, as separate instances have) share one table. Thousands of concurrent
 * creates spread over them get distinct ids, and the table holds exactly the pets answered 201.
 */
const INSTANCES = 6
const CREATES = Number(process.env.PETSTORE_LOAD_CREATES ?? 2_000)

let env: DynamoTestEnv

beforeAll(async () => {
  env = await startDynamoTestEnv()
})
afterAll(async () => {
  await env?.close()
})

const instance = () => {
  const client = createDocumentClient({
    endpoint: env.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  })
  return createCreatePetHandler({
    logger: fakeLogger(),
    pets: new PetRepository({
      client,
      tableName: env.petTable,
      // Small blocks so instances interleave their reservations many times.
      ids: new BlockIdAllocator({ client, tableName: env.petTable, blockSize: 7 }),
    }),
    idempotency: new IdempotencyRepository({ client, tableName: env.idempotencyTable }),
  })
}

describe('concurrent Lambda instances', () => {
  it(`${CREATES} creates over ${INSTANCES} instances: distinct ids, every 201 stored once`, {
    timeout: 120_000,
  }, async () => {
    const handlers = Array.from({ length: INSTANCES }, instance)
    const responses = await Promise.all(
      Array.from({ length: CREATES }, (_, i) =>
        (handlers[i % INSTANCES] as ReturnType<typeof instance>)(
          restEvent({
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ name: `instance ${i % INSTANCES} pet ${i}`, categoryId: i }),
          }),
          lambdaContext(),
        ),
      ),
    )
    expect(responses.map((response) => response.statusCode)).toEqual(responses.map(() => 201))
    const ids = responses.map((response) => JSON.parse(response.body).id as number)
    expect(new Set(ids).size).toBe(CREATES)

    const stored: number[] = []
    let startKey: Record<string, unknown> | undefined
    do {
      const page = await env.documentClient.send(
        new ScanCommand({
          TableName: env.petTable,
          FilterExpression: 'begins_with(#pk, :pet)',
          ExpressionAttributeNames: { '#pk': PET_TABLE.partitionKey },
          ExpressionAttributeValues: { ':pet': PET_TABLE.petKeyPrefix },
          ExclusiveStartKey: startKey,
          ConsistentRead: true,
        }),
      )
      stored.push(...(page.Items ?? []).map((item) => Number(String(item.id))))
      startKey = page.LastEvaluatedKey
    } while (startKey)
    expect(stored.sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b))
  })
})
