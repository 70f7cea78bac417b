import { describe, expect, it } from 'vitest'
import { stageOutputsFrom } from '#ops/stage/stack-outputs-reader.ts'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'
import { appStage } from './support/synth-app.ts'

/**
 * The keys CLI and the smoke test find a deployed stage only by its stack outputs: every name
 * they read must be an output of the synthesized stacks.
 */
const outputNames = (template: ReturnType<typeof appStage>['api']): Record<string, string> =>
  Object.fromEntries(
    Object.keys((template.toJSON() as { Outputs?: object }).Outputs ?? {}).map((name) => [
      name,
      `<${name}>`,
    ]),
  )

describe.each(STAGE_NAMES)('the %s stacks', (stage) => {
  it('have every output the keys CLI reads', () => {
    const { api, data } = appStage(stage)
    const outputs = stageOutputsFrom(outputNames(api), `petstore-${stage}-api`)
    expect(outputs.keySyncFunctionName).toBe('<KeySyncFunctionName>')
    expect(outputNames(data).KeyMirrorTableName).toBe('<KeyMirrorTableName>')
  })
})
