import { requireEnv } from '#shared/config/env-config.ts'
import { IdempotencyRepository } from '#shared/data/idempotency-repository.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import { petOperationDependencies } from '#shared/wiring/pet-operation-dependencies.ts'
import type { CreatePetDependencies } from './create-pet-handler.ts'

/**
 * createPet's dependencies, built once per instance from its environment by create-pet-lambda.ts:
 * a pet operation's, plus the idempotency records (a table of their own).
 */
export const createPetDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): CreatePetDependencies => {
  const base = functionBase('createPet', env)
  return {
    ...petOperationDependencies('createPet', base),
    idempotency: new IdempotencyRepository({
      client: base.dynamo,
      tableName: requireEnv('IDEMPOTENCY_TABLE_NAME', env),
    }),
  }
}
