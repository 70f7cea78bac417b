import { createPetDependencies } from './create-pet-dependencies.ts'
import { createPetHandler } from './create-pet-handler.ts'

// createPet's Lambda entry: its handler, built once per instance.

export const handler = createPetHandler(createPetDependencies())
