import { createPetDependencies } from './create-pet-dependencies.ts'
import { createPetHandler } from './create-pet-handler.ts'

export const handler = createPetHandler(createPetDependencies())
