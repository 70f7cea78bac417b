import { petFunctionDependencies } from '#functions/pet-function-dependencies.ts'
import { createGetPetHandler } from './get-pet-handler.ts'

export const handler = createGetPetHandler(petFunctionDependencies('getPet'))
