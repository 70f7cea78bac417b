import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { App } from 'aws-cdk-lib'
import { CloudAssembly } from 'aws-cdk-lib/cx-api'
import { describe, expect, it } from 'vitest'
import { petstoreSettings, readCdkJsonSettings } from '#infra/config/cdk-json-settings.ts'
import { CDK_JSON, REPO_ROOT } from './support/cdk-json.ts'
import { appAssemblyDir, appSynthesis, synthesizeApp } from './support/synth-app.ts'

const STACKS = [
  'petstore-staging-data',
  'petstore-staging-api',
  'petstore-production-data',
  'petstore-production-api',
]

describe('the CDK app', () => {
  // The run's one synthesis of app.ts (support/app-synthesis-setup.ts).
  const assembly = new CloudAssembly(appAssemblyDir())

  it('synthesizes a full stack set for staging and for production', () => {
    expect(assembly.stacks.map((stack) => stack.stackName).sort()).toEqual([...STACKS].sort())
    for (const stage of ['staging', 'production']) {
      const api = assembly.getStackByName(`petstore-${stage}-api`)
      expect(api.dependencies.map((dependency) => dependency.id)).toContain(
        `petstore-${stage}-data`,
      )
    }
  })

  it('is env-agnostic by default, so synthesis needs no AWS account or credentials', () => {
    for (const stack of assembly.stacks) {
      expect(stack.environment.account).toBe('unknown-account')
      expect(stack.environment.region).toBe('unknown-region')
    }
  })

  it('protects production stacks against deletion, not staging ones', () => {
    for (const stack of assembly.stacks) {
      expect(stack.terminationProtection ?? false, stack.stackName).toBe(
        stack.stackName.startsWith('petstore-production-'),
      )
    }
  })

  it('limits synthesis to one stage with -c stage=<name>', () => {
    const staging = synthesizeApp({ stage: 'staging' })
    expect(staging.stages.map((stacks) => stacks.config.stage)).toEqual(['staging'])
    expect(() => synthesizeApp({ stage: 'qa' })).toThrow(/Invalid context stage="qa"/)
  })

  it('refuses a -c stage setting that cdk.json does not hold, as app.ts reads them', () => {
    // The CDK CLI puts cdk.json's context and every -c value into the app's context.
    const app = new App({
      context: { ...CDK_JSON.context, 'production.alarmEmail': 'ops@example.com' },
    })
    expect(() => petstoreSettings(app.node.getAllContext(), readCdkJsonSettings())).toThrow(
      /^-c production\.alarmEmail=ops@example\.com: cdk\.json does not hold that/,
    )
    const plain = new App({ context: { ...CDK_JSON.context, stage: 'staging' } })
    expect(petstoreSettings(plain.node.getAllContext(), readCdkJsonSettings())).toEqual(
      readCdkJsonSettings(),
    )
  })

  it('pins a stage to an account and region when cdk.json names them', () => {
    const pinned = synthesizeApp({
      stage: 'production',
      'production.account': '123456789012',
      'production.region': 'eu-central-1',
    })
    const stack = pinned.stage('production').stacks.api
    expect(stack.account).toBe('123456789012')
    expect(stack.region).toBe('eu-central-1')
  })
})

describe('cdk.json and app.ts', () => {
  it('runs the TypeScript entry with tsx and keeps build output out of watch', () => {
    expect(CDK_JSON.app).toBe('npx tsx infra/app.ts')
    expect(readdirSync(join(REPO_ROOT, 'infra'))).toContain('app.ts')
    expect(CDK_JSON.watch.exclude).toEqual(expect.arrayContaining(['cdk.out', 'node_modules']))
  })

  it('synthesizes through app.ts with no AWS credentials, cdk-nag enforced', () => {
    // The setup ran app.ts as the CLI does for `cdk synth`: the assembly directory and
    // cdk.json's context in the environment, no credentials reachable.
    const { outdir, status, stderr } = appSynthesis()
    expect(stderr).not.toMatch(/ValidationFailed|AwsSolutions-/)
    expect(status).toBe(0)
    const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
      artifacts: Record<string, { type: string }>
    }
    const stacks = Object.entries(manifest.artifacts)
      .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack')
      .map(([id]) => id)
    expect(stacks.sort()).toEqual([...STACKS].sort())
  })
})
