import { listPetsDependencies } from './list-pets-dependencies.ts'
import { listPetsHandler } from './list-pets-handler.ts'

// listPets' Lambda entry: its handler, built once per instance.

export const handler = listPetsHandler(listPetsDependencies())
