import { type App, Tags } from 'aws-cdk-lib'
import { readStageConfig, type StageConfig, selectedStages } from '#infra/config/stage-config.ts'
import type { ContextReader } from '#infra/config/stage-context-reader.ts'
import { PetstoreApiStack } from './petstore-api-stack.ts'
import { PetstoreDataStack } from './petstore-data-stack.ts'

export interface StageStacks {
  config: StageConfig
  data: PetstoreDataStack
  api: PetstoreApiStack
}

/** Stack names, e.g. `petstore-production-data`: what `cdk deploy` and the console show. */
export const stackName = (stage: string, part: 'data' | 'api'): string =>
  `petstore-${stage}-${part}`

/** One stage's stack set: data, then the API that reads it. */
export const addStageStacks = (app: App, config: StageConfig): StageStacks => {
  const env =
    config.account || config.region
      ? {
          ...(config.account ? { account: config.account } : {}),
          ...(config.region ? { region: config.region } : {}),
        }
      : undefined
  const common = {
    config,
    ...(env ? { env } : {}),
  }
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
  })
  for (const stack of [data, api]) {
    Tags.of(stack).add('project', 'petstore')
    Tags.of(stack).add('petstore:stage', config.stage)
  }
  return { config, data, api }
}

/** The stages the context selects (`-c stage=...`, else both), each with its stack set. */
export const addPetstoreStacks = (app: App): StageStacks[] => {
  const context: ContextReader = (key) => app.node.tryGetContext(key)
  return selectedStages(context).map((stage) =>
    addStageStacks(app, readStageConfig(context, stage)),
  )
}
