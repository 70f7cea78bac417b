import { describe, expect, it } from 'vitest'
import { withFunctionEnvironment } from '#local/deployed-iam/local-iam.ts'
import { requireEnv } from '#shared/config/env-config.ts'

/**
 * A function of the sources starts with its own variables in place, as Lambda starts it with
 * its template's: the process's are put back after, and a cold start that fails for a variable
 * its template does not give it says where such a variable comes from.
 */
describe("a source function's cold start with its template's variables", () => {
  it('sees its own variables, and the process gets its own back', async () => {
    process.env.H46_GIVEN = 'before'
    const seen = await withFunctionEnvironment(
      'listPets',
      { H46_GIVEN: 'its own', H46_UNSET: undefined },
      async () => [process.env.H46_GIVEN, process.env.H46_UNSET],
    )
    expect(seen).toEqual(['its own', undefined])
    expect(process.env.H46_GIVEN).toBe('before')
    delete process.env.H46_GIVEN
  })

  it('names the route entry as the fix when its template withholds a variable it requires', async () => {
    process.env.CURSOR_SECRET = 'c'.repeat(64)
    const start = withFunctionEnvironment(
      'listCategoryPets',
      { CURSOR_SECRET: undefined },
      async () => requireEnv('CURSOR_SECRET', process.env),
    )
    await expect(start).rejects.toThrow(
      /^listCategoryPets's cold start failed: its synthesized template does not give it CURSOR_SECRET \(on AWS its cold start fails the same way\).*the cursor secret with `cursors: true`/,
    )
    expect(process.env.CURSOR_SECRET).toBe('c'.repeat(64))
    delete process.env.CURSOR_SECRET
  })
})
