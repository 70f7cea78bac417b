import { requireEnv } from '#shared/config/env-config.ts'
import { CursorCodec } from '#shared/data/cursor-codec.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import { petOperationDependencies } from '#shared/wiring/pet-operation-dependencies.ts'
import type { ListPetsDependencies } from './list-pets-handler.ts'

/**
 * listPets' dependencies, built once per instance from its environment by list-pets-lambda.ts:
 * a pet operation's, plus the cursor codec keyed by the stage's secret (made at deploy time in
 * Secrets Manager; locally kept in the data directory). Only listPets gets the secret.
 */
export const listPetsDependencies = (
  env: NodeJS.ProcessEnv = process.env,
): ListPetsDependencies => ({
  ...petOperationDependencies('listPets', functionBase('listPets', env)),
  cursors: new CursorCodec(requireEnv('CURSOR_SECRET', env), 'listPets'),
})
