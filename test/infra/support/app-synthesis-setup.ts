import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
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

/** Where a synthesis writes its assembly, and where its AppSynthesis is written once it ends. */
export interface AppSynthesisRun {
  outdir: string
  resultFile: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    appSynthesis: AppSynthesisRun
  }
}

/** infra/app.ts as `cdk synth` runs it: assembly directory and context in the environment. */
const synthesis = () => {
  const outdir = mkdtempSync(join(tmpdir(), 'petstore-cdk-'))
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) if (name.startsWith('AWS_')) delete env[name]
  return {
    outdir,
    command: process.execPath,
    args: ['--import', 'tsx', 'infra/app.ts'],
    options: {
      cwd: REPO_ROOT,
      env: {
        ...env,
        // No credentials are reachable: synthesis must not need an AWS account.
        AWS_CONFIG_FILE: join(outdir, 'no-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-credentials'),
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify(CDK_JSON.context),
      },
    },
  }
}

/** Synthesizes at once, as `npm run bench` needs it: the bundles exactly as deployed. */
export const synthesizeApp = (): AppSynthesis => {
  const { outdir, command, args, options } = synthesis()
  const result = spawnSync(command, args, { ...options, encoding: 'utf8' })
  return {
    outdir,
    status: result.status,
    stderr: result.error ? String(result.error) : result.stderr,
  }
}

/** Written whole or not at all: a reader polling for the file never sees half of it. */
const writeResult = (run: AppSynthesisRun, result: AppSynthesis): void => {
  writeFileSync(`${run.resultFile}.partial`, JSON.stringify(result))
  renameSync(`${run.resultFile}.partial`, run.resultFile)
}

/** Starts a synthesis and returns at once; `finished` settles once its result is written. */
const startSynthesis = (): { run: AppSynthesisRun; finished: Promise<void> } => {
  const { outdir, command, args, options } = synthesis()
  const run = { outdir, resultFile: `${outdir}.result.json` }
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const finished = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      writeResult(run, { outdir, status: null, stderr: String(error) })
      resolve()
    })
    child.once('close', (status) => {
      writeResult(run, { outdir, status, stderr })
      resolve()
    })
  })
  return { run, finished }
}

/**
 * The infra project's only bundled synthesis, shared by every infra test file: infra/app.ts for
 * both stages, cdk-nag enforced by app.ts. Vitest runs every project's global setup before any
 * test, so the synthesis is only started here: it runs beside the other projects' tests, and the
 * infra files wait for it (synth-app.ts). Failures are reported by app-synthesis.test.ts (and by
 * any file that reads the assembly), not thrown here.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runs: { run: AppSynthesisRun; finished: Promise<void> }[] = []
  const start = () => {
    const started = startSynthesis()
    runs.push(started)
    project.provide('appSynthesis', started.run)
    return started.finished
  }
  start()
  // Watch mode: the code may have changed since the last run; a rerun waits for its synthesis.
  project.onTestsRerun(start)
  return async () => {
    for (const { run, finished } of runs) {
      await finished
      rmSync(run.outdir, { recursive: true, force: true })
      rmSync(run.resultFile, { force: true })
    }
  }
}
