import { getPetDependencies } from './get-pet-dependencies.ts'
import { getPetHandler } from './get-pet-handler.ts'

// getPet's Lambda entry: its handler, built once per instance.

export const handler = getPetHandler(getPetDependencies())
