import { getPetDependencies } from './get-pet-dependencies.ts'
import { getPetHandler } from './get-pet-handler.ts'

export const handler = getPetHandler(getPetDependencies())
