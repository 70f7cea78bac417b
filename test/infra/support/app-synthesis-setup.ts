import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { CDK_JSON, REPO_ROOT } from './cdk-json.ts'

/** How running infra/app.ts went; test files read the assembly through synth-app.ts. */
export interface AppSynthesis {
  /** The cloud assembly: templates, manifest and the bundled function code. */
  outdir: string
  status: number | null
  stderr: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    appSynthesis: AppSynthesis
  }
}

/**
 * infra/app.ts run as `cdk synth` runs it: assembly directory and context in the environment.
 * Also what `npm run bench` measures: the bundles exactly as deployed.
 */
export const synthesizeApp = (): AppSynthesis => {
  const outdir = mkdtempSync(join(tmpdir(), 'petstore-cdk-'))
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) if (name.startsWith('AWS_')) delete env[name]
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: {
      ...env,
      // No credentials are reachable: synthesis must not need an AWS account.
      AWS_CONFIG_FILE: join(outdir, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-credentials'),
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify(CDK_JSON.context),
    },
  })
  return {
    outdir,
    status: result.status,
    stderr: result.error ? String(result.error) : result.stderr,
  }
}

/**
 * The infra project's only bundled synthesis (globalSetup), shared by every infra test file:
 * infra/app.ts for both stages, cdk-nag enforced by app.ts. Failures are reported by
 * app-synthesis.test.ts (and by any file that reads the assembly), not thrown here.
 */
export default function setup(project: TestProject): () => void {
  const outdirs: string[] = []
  const run = (): void => {
    const synthesis = synthesizeApp()
    outdirs.push(synthesis.outdir)
    project.provide('appSynthesis', synthesis)
  }
  run()
  // Watch mode: the code may have changed since the last run.
  project.onTestsRerun(run)
  return () => {
    for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true })
  }
}
