import { createPetFunctionDependencies } from '#functions/pet-function-dependencies.ts'
import { createCreatePetHandler } from './create-pet-handler.ts'

export const handler = createCreatePetHandler(createPetFunctionDependencies())
