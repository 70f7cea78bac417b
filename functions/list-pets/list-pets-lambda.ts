import { petFunctionDependencies } from '../../shared/runtime/function-dependencies.ts'
import { createListPetsHandler } from './list-pets-handler.ts'

export const handler = createListPetsHandler(petFunctionDependencies('listPets'))
