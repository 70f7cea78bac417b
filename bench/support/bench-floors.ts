import { routeOf } from '#shared/config/routes-config.ts'
import type { Operation } from './bench-subjects.ts'

/**
 * The floor each function is measured against (its bundle, its init instructions and its warm
 * time): a bare handler making only its SDK calls, found by name, `bench/floors/<functionName>-floor.ts`
 * (the authorizer's `authorizer-floor.ts`). The bench stops on a function without one, and
 * npm test fails (test/unit/bench-floors.test.ts), in `missingFloor`'s words.
 */
export const floorEntryOf = (operation: Operation): string =>
  `bench/floors/${operation === 'authorizer' ? 'authorizer' : routeOf(operation).functionName}-floor.ts`

export const missingFloor = (operation: Operation): string =>
  `${operation} has no floor: write ${floorEntryOf(operation)}, a bare handler making only its SDK calls (as bench/floors/get-pet-floor.ts; a listing as bench/floors/list-pets-floor.ts)`
