import { readFileSync } from 'node:fs'
import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import type { StageName } from '#infra/config/stage-config.ts'
import { addPetstoreStacks, type StageStacks } from '#infra/stacks/petstore-stage-stacks.ts'

interface CdkJson {
  app: string
  watch: { include: string[]; exclude: string[] }
  context: Record<string, unknown>
}

export const CDK_JSON = JSON.parse(
  readFileSync(new URL('../../../cdk.json', import.meta.url), 'utf8'),
) as CdkJson

export interface SynthesizedStage {
  stacks: StageStacks
  data: Template
  api: Template
}

export interface SynthesizedApp {
  app: App
  stages: StageStacks[]
  stage(name: StageName): SynthesizedStage
}

/**
 * The app as `cdk synth` builds it: cdk.json's context (feature flags) plus the given context,
 * stacks from the same function app.ts calls, functions bundled for real by local esbuild.
 * `bundle: false` skips esbuild (CDK's `aws:cdk:bundling-stacks`) for extra apps that only
 * check template details unrelated to the code.
 */
export const synthesizeApp = (
  context: Record<string, unknown> = {},
  { bundle = true }: { bundle?: boolean } = {},
): SynthesizedApp => {
  const app = new App({
    context: {
      ...CDK_JSON.context,
      ...(bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
      ...context,
    },
  })
  const stages = addPetstoreStacks(app)
  const templates = new Map(
    stages.map((stacks) => [
      stacks.config.stage,
      { stacks, data: Template.fromStack(stacks.data), api: Template.fromStack(stacks.api) },
    ]),
  )
  return {
    app,
    stages,
    stage: (name) => {
      const found = templates.get(name)
      if (!found) throw new Error(`Stage ${name} was not synthesized`)
      return found
    },
  }
}

export interface CfnResource {
  Type: string
  Properties?: Record<string, unknown>
  DeletionPolicy?: string
  UpdateReplacePolicy?: string
  DependsOn?: string[]
}

/** Resources of one type as [logicalId, resource] pairs. */
export const resourcesOf = (template: Template, type: string): [string, CfnResource][] =>
  Object.entries(template.findResources(type) as Record<string, CfnResource>)

export const propsOf = (resource: CfnResource): Record<string, unknown> => resource.Properties ?? {}

/** The Lambda function whose POWERTOOLS_SERVICE_NAME is `service` (operation id or `authorizer`). */
export const functionByService = (template: Template, service: string): [string, CfnResource] => {
  const found = resourcesOf(template, 'AWS::Lambda::Function').find(
    ([, fn]) =>
      (propsOf(fn).Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
        ?.POWERTOOLS_SERVICE_NAME === service,
  )
  if (!found) throw new Error(`No function with POWERTOOLS_SERVICE_NAME=${service}`)
  return found
}

export const envOf = (fn: CfnResource): Record<string, unknown> =>
  (propsOf(fn).Environment as { Variables: Record<string, unknown> }).Variables
