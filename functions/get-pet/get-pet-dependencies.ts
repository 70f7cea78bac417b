import { functionBase } from '#shared/wiring/function-dependencies.ts'
import { petOperationDependencies } from '#shared/wiring/pet-operation-dependencies.ts'
import type { GetPetDependencies } from './get-pet-handler.ts'

/** getPet's dependencies, built once per instance from its environment by get-pet-lambda.ts. */
export const getPetDependencies = (env: NodeJS.ProcessEnv = process.env): GetPetDependencies =>
  petOperationDependencies('getPet', functionBase('getPet', env))
