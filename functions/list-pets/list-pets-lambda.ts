import { listPetsFunctionDependencies } from '#functions/pet-function-dependencies.ts'
import { createListPetsHandler } from './list-pets-handler.ts'

export const handler = createListPetsHandler(listPetsFunctionDependencies())
