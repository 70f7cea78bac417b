import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CloudAssembly } from 'aws-cdk-lib/cx-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CDK_JSON, type SynthesizedApp, synthesizeApp } from './support/synth-app.ts'

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
const STACKS = [
  'petstore-staging-data',
  'petstore-staging-api',
  'petstore-production-data',
  'petstore-production-api',
]

describe('the CDK app', () => {
  let synthesized: SynthesizedApp
  let assembly: CloudAssembly

  beforeAll(() => {
    synthesized = synthesizeApp()
    assembly = synthesized.app.synth()
  })

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
    for (const { config, data, api } of synthesized.stages) {
      expect(data.terminationProtection).toBe(config.stage === 'production')
      expect(api.terminationProtection).toBe(config.stage === 'production')
    }
  })

  it('limits synthesis to one stage with -c stage=<name>', () => {
    const staging = synthesizeApp({ stage: 'staging' }, { bundle: false })
    expect(staging.stages.map((stacks) => stacks.config.stage)).toEqual(['staging'])
    expect(() => synthesizeApp({ stage: 'qa' }, { bundle: false })).toThrow(
      /Invalid context stage="qa"/,
    )
  })

  it('pins a stage to an account and region when the context names them', () => {
    const pinned = synthesizeApp(
      {
        stage: 'production',
        'production.account': '123456789012',
        'production.region': 'eu-central-1',
      },
      { bundle: false },
    )
    const stack = pinned.stage('production').stacks.api
    expect(stack.account).toBe('123456789012')
    expect(stack.region).toBe('eu-central-1')
  })
})

describe('cdk.json and app.ts', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'petstore-cdk-'))
  afterAll(() => rmSync(outdir, { recursive: true, force: true }))

  it('runs the TypeScript entry with tsx and keeps build output out of watch', () => {
    expect(CDK_JSON.app).toBe('npx tsx infra/app.ts')
    expect(existsSync(join(REPO_ROOT, 'infra/app.ts'))).toBe(true)
    expect(CDK_JSON.watch.exclude).toEqual(expect.arrayContaining(['cdk.out', 'node_modules']))
  })

  it('synthesizes through app.ts with no AWS credentials, cdk-nag enforced', () => {
    // What the CLI does for `cdk synth -c stage=staging`: run the app with the assembly
    // directory and the context in the environment. No credentials are reachable.
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const name of Object.keys(env)) if (name.startsWith('AWS_')) delete env[name]
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: {
        ...env,
        AWS_CONFIG_FILE: join(outdir, 'no-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-credentials'),
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON.context, stage: 'staging' }),
      },
    })
    expect(result.stderr).not.toMatch(/ValidationFailed|AwsSolutions-/)
    expect(result.status).toBe(0)
    const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
      artifacts: Record<string, { type: string }>
    }
    const stacks = Object.entries(manifest.artifacts)
      .filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack')
      .map(([id]) => id)
    expect(stacks.sort()).toEqual(['petstore-staging-api', 'petstore-staging-data'])
  }, 120_000)
})
