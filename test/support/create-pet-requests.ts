import { ScanCommand } from '@aws-sdk/lib-dynamodb'
import type { Context } from 'aws-lambda'
import { FUNCTION_TIMEOUT_SECONDS } from '#shared/config/function-timeouts-config.ts'
import { IDEMPOTENCY_KEY_HEADER } from '#shared/domain/idempotency-schema.ts'
import { lambdaContext, restEvent } from './api-gateway-events.ts'
import type { DynamoTestEnv } from './dynamo-test-env.ts'

/** A POST /pets event as API Gateway sends it, with an Idempotency-Key when given. */
export const createPetEvent = (body: object, idempotencyKey?: string) =>
  restEvent({
    method: 'POST',
    body: JSON.stringify(body),
    headers: {
      'Content-Type': 'application/json',
      ...(idempotencyKey ? { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey } : {}),
    },
  })

/** createPet's Lambda timeout: what a fresh invocation has left. */
export const CREATE_PET_TIMEOUT_MS = FUNCTION_TIMEOUT_SECONDS.createPet * 1_000

/** A Lambda context whose remaining time runs down from `remainingMs` as the runtime's does. */
export const contextWithRemaining = (remainingMs = CREATE_PET_TIMEOUT_MS): Context => {
  const deadline = Date.now() + remainingMs
  return { ...lambdaContext(), getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) }
}

/** The pet items stored under a name, read straight from the table (strongly consistent). */
export const storedPetsNamed = async (env: DynamoTestEnv, name: string) => {
  const { Items = [] } = await env.documentClient.send(
    new ScanCommand({
      TableName: env.petTable,
      FilterExpression: '#name = :name',
      ExpressionAttributeNames: { '#name': 'name' },
      ExpressionAttributeValues: { ':name': name },
      ConsistentRead: true,
    }),
  )
  return Items
}
