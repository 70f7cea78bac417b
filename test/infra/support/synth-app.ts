import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { App } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { inject } from 'vitest'
import { petstoreSettings } from '#infra/config/cdk-json-settings.ts'
import { CONTEXT_ROOT } from '#infra/config/stage-context-reader.ts'
import { addPetstoreStacks, type StageStacks } from '#infra/stacks/petstore-stage-stacks.ts'
import type { StageName } from '#shared/config/stages-config.ts'
import type { AppSynthesis } from './app-synthesis-setup.ts'
import { CDK_JSON } from './cdk-json.ts'
import { isSettingName, settingsOf } from './stage-settings.ts'

/** Bundling five functions and validating both stages: seconds, more on a busy machine. */
const SYNTHESIS_TIMEOUT_MS = 120_000

/**
 * The first run's synthesis runs beside the other projects' tests (app-synthesis-setup.ts):
 * every infra file waits for it here, on import. A watch-mode rerun waits for its own before
 * any test runs.
 */
const { resultFile: firstResult } = inject('appSynthesis')
const deadline = Date.now() + SYNTHESIS_TIMEOUT_MS
while (!existsSync(firstResult)) {
  if (Date.now() > deadline) throw new Error('infra/app.ts did not finish synthesizing in time')
  await new Promise((resolve) => setTimeout(resolve, 50))
}

/** How this run's synthesis of infra/app.ts went. */
export const appSynthesis = (): AppSynthesis =>
  JSON.parse(readFileSync(inject('appSynthesis').resultFile, 'utf8')) as AppSynthesis

/**
 * The cloud assembly of the run's one synthesis of infra/app.ts (app-synthesis-setup.ts):
 * bundled function code, cdk-nag enforced, both stages.
 */
export const appAssemblyDir = (): string => {
  const { outdir, status, stderr } = appSynthesis()
  if (status !== 0) throw new Error(`infra/app.ts did not synthesize (exit ${status}):\n${stderr}`)
  return outdir
}

// By file: a watch-mode rerun synthesizes into a new directory.
const appTemplates = new Map<string, Template>()

/** A stack's template from that assembly, e.g. `appTemplate('petstore-production-api')`. */
export const appTemplate = (stackName: string): Template => {
  const file = join(appAssemblyDir(), `${stackName}.template.json`)
  let template = appTemplates.get(file)
  if (!template) {
    template = Template.fromJSON(JSON.parse(readFileSync(file, 'utf8')))
    appTemplates.set(file, template)
  }
  return template
}

/** A stage's two templates from that assembly. */
export const appStage = (stage: StageName): { data: Template; api: Template } => ({
  data: appTemplate(`petstore-${stage}-data`),
  api: appTemplate(`petstore-${stage}-api`),
})

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
 * The app with other settings than app.ts gets (e.g. a custom domain), for template details
 * unrelated to the code: settings given by their dotted names (`'production.domainName': …`) are
 * handed to the app as cdk.json's `petstore` would hold them (the app's settings source is a
 * parameter: no test writes cdk.json), anything else (`stage`) is CDK context beside cdk.json's;
 * stacks from the same functions app.ts calls, and no bundling (CDK's `aws:cdk:bundling-stacks`),
 * which keeps it quick. Bundles are checked once, in the app.ts assembly (appAssemblyDir).
 */
export const synthesizeApp = (values: Record<string, unknown> = {}): SynthesizedApp => {
  const settings = settingsOf(
    Object.fromEntries(Object.entries(values).filter(([key]) => isSettingName(key))),
  )
  const context = Object.fromEntries(Object.entries(values).filter(([key]) => !isSettingName(key)))
  const app = new App({
    // As the CDK CLI runs app.ts: cdk.json's context, its `petstore` object included.
    context: {
      ...CDK_JSON.context,
      [CONTEXT_ROOT]: settings,
      'aws:cdk:bundling-stacks': [],
      ...context,
    },
    // CDK's CloudFormation rule check (a WASM engine, about a second per test process) runs on
    // the app.ts synthesis; these variants only feed assertions on template details.
    builtinCloudFormationValidation: false,
  })
  const stages = addPetstoreStacks(app, petstoreSettings(app.node.getAllContext(), settings))
  return {
    app,
    stages,
    stage: (name) => {
      const stacks = stages.find((candidate) => candidate.config.stage === name)
      if (!stacks) throw new Error(`Stage ${name} was not synthesized`)
      // Templates on demand: most callers read one stack of one stage.
      return {
        stacks,
        get data() {
          return Template.fromStack(stacks.data)
        },
        get api() {
          return Template.fromStack(stacks.api)
        },
      }
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

/** The logical id of a function's `live` alias (what API Gateway must invoke), or an error. */
export const liveAliasIdOf = (template: Template, functionId: string): string => {
  const aliases = resourcesOf(template, 'AWS::Lambda::Alias').filter(
    ([, alias]) =>
      JSON.stringify(propsOf(alias).FunctionName) === JSON.stringify({ Ref: functionId }) &&
      propsOf(alias).Name === 'live',
  )
  if (aliases.length !== 1) throw new Error(`${functionId} has ${aliases.length} live aliases`)
  return (aliases[0] as [string, CfnResource])[0]
}
