import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { floorEntryOf, missingFloor } from '#bench/support/bench-floors.ts'
import { ROUTES } from '#shared/config/routes-config.ts'

/**
 * The bench measures each function against its floor and stops on one without it; the bench is
 * not part of npm test, so a floor never written fails here, naming the file to write.
 */
describe("the bench's floors", () => {
  it("are found by function name, the authorizer's by its own", () => {
    expect(floorEntryOf('listPets')).toBe('bench/floors/list-pets-floor.ts')
    expect(floorEntryOf('authorizer')).toBe('bench/floors/authorizer-floor.ts')
  })

  it.each([...ROUTES.map((route) => route.operationId), 'authorizer'] as const)(
    '%s has its floor on disk',
    (operation) => {
      expect(
        existsSync(new URL(`../../${floorEntryOf(operation)}`, import.meta.url)),
        missingFloor(operation),
      ).toBe(true)
    },
  )
})
