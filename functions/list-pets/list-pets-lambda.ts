import { listPetsDependencies } from './list-pets-dependencies.ts'
import { listPetsHandler } from './list-pets-handler.ts'

export const handler = listPetsHandler(listPetsDependencies())
