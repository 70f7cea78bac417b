import { petFunctionDependencies } from '../../shared/runtime/function-dependencies.ts'
import { createCreatePetHandler } from './create-pet-handler.ts'

export const handler = createCreatePetHandler(petFunctionDependencies('createPet'))
