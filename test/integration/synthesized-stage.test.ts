import { describe, expect, it } from 'vitest'
import { ADDRESS_BLOCK_OPERATION } from '#functions/address-block/address-block-dependencies.ts'
import {
  readAssemblyStage,
  SynthesisError,
  synthesisInputsDigest,
  synthesizedStage,
} from '#local/deployed-iam/synthesized-stage.ts'
import { ROUTES } from '#shared/config/routes-config.ts'
import { KEY_SYNC_OPERATION } from '#shared/observability/metrics.ts'

/**
 * The templates the local server enforces IAM from: infra/app.ts's staging stacks, synthesized
 * without bundles and kept by a digest of what a synthesis reads, so a start with unchanged
 * sources synthesizes nothing.
 */
describe("the stage's synthesized templates", () => {
  it('hold a function for each route, the authorizer, the key sync and the automatic block, each with its role', async () => {
    const stage = await synthesizedStage()
    const functions = Object.values(stage.api.Resources).filter(
      (resource) => resource.Type === 'AWS::Lambda::Function',
    )
    const services = functions.map(
      (fn) =>
        (fn.Properties?.Environment as { Variables: Record<string, string> } | undefined)?.Variables
          .POWERTOOLS_SERVICE_NAME,
    )
    expect(services.sort()).toEqual(
      [
        ...ROUTES.map((route) => route.operationId),
        'authorizer',
        KEY_SYNC_OPERATION,
        ADDRESS_BLOCK_OPERATION,
      ].sort(),
    )
    expect(stage.stage).toBe('staging')
    expect(Object.keys(stage.data.Outputs ?? {})).toContain('PetTableName')
  })

  it('are found again, not synthesized, while the inputs stay the same', async () => {
    expect(await synthesizedStage()).toBe(await synthesizedStage())
    const digest = await synthesisInputsDigest('staging')
    expect(await synthesisInputsDigest('staging')).toBe(digest)
    expect(await synthesisInputsDigest('production')).not.toBe(digest)
  })

  it('come from a cloud assembly when the server runs one, and its absence is named', async () => {
    await expect(readAssemblyStage('/nonexistent/cdk.out', 'staging')).rejects.toThrow(
      SynthesisError,
    )
    await expect(readAssemblyStage('/nonexistent/cdk.out', 'staging')).rejects.toThrow(
      /petstore-staging-api.template.json does not exist: synthesize the cloud assembly first \(npm run synth writes cdk.out\)/,
    )
  })
})
