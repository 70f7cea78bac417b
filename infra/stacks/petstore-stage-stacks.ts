import { type App, Tags } from 'aws-cdk-lib'
import { type PetstoreSettings, settingsReader } from '#infra/config/cdk-json-settings.ts'
import { readStageConfig, type StageConfig, selectedStages } from '#infra/config/stage-config.ts'
import type { ContextReader } from '#infra/config/stage-context-reader.ts'
import { applyStageRoles } from '#infra/constructs/stage-roles-aspect.ts'
import { stageTags } from '#keys/usage-plans-config.ts'
import { stackName } from '#shared/config/stack-names-config.ts'
import { PetstoreApiStack } from './petstore-api-stack.ts'
import { PetstoreDataStack } from './petstore-data-stack.ts'

export interface StageStacks {
  config: StageConfig
  data: PetstoreDataStack
  api: PetstoreApiStack
}

/**
 * A stage's stacks' `env`: its own account and Region where its settings name them, else none
 * (the deploying credentials decide). Every stack of a stage, the release role's too, is there.
 */
export const stageEnv = (config: StageConfig): { env?: { account?: string; region?: string } } =>
  config.account || config.region
    ? {
        env: {
          ...(config.account ? { account: config.account } : {}),
          ...(config.region ? { region: config.region } : {}),
        },
      }
    : {}

/** One stage's stack set: data, then the API that reads it. */
export const addStageStacks = (app: App, config: StageConfig): StageStacks => {
  const common = { config, ...stageEnv(config) }
  const data = new PetstoreDataStack(app, stackName(config.stage, 'data'), {
    ...common,
    description: `Petstore ${config.stage}: pet, rate-limit and key mirror tables`,
  })
  const api = new PetstoreApiStack(app, stackName(config.stage, 'api'), {
    ...common,
    description: `Petstore ${config.stage}: functions, REST API, usage plans, alarms, dashboard`,
    petTable: data.petTable,
    rateLimitTable: data.rateLimitTable,
    idempotencyTable: data.idempotencyTable,
    keyMirrorTable: data.keyMirrorTable,
    storeKeyTable: data.storeKeyTable,
    keyMacSecrets: data.keyMacSecrets,
  })
  for (const stack of [data, api]) {
    for (const [key, value] of Object.entries(stageTags(config.stage)))
      Tags.of(stack).add(key, value)
    // What the release path's execution policy requires of every role (docs/release-permissions.md).
    applyStageRoles(stack, config.stage)
  }
  return { config, data, api }
}

/**
 * The stages the context selects (`-c stage=...`, else both), each with its stack set, from the
 * settings cdk.json holds (app.ts reads the file; a test passes settings of its own).
 */
export const addPetstoreStacks = (app: App, settings: PetstoreSettings): StageStacks[] => {
  const context: ContextReader = (key) => app.node.tryGetContext(key)
  return selectedStages(context).map((stage) =>
    addStageStacks(app, readStageConfig(settingsReader(settings), stage)),
  )
}
