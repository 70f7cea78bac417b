import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
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
const synthesis = (outdir = mkdtempSync(join(tmpdir(), 'petstore-cdk-'))) => {
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
const startSynthesis = (
  { outdir, command, args, options } = synthesis(),
): { run: AppSynthesisRun; finished: Promise<void> } => {
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
 * What the assembly could be made of: every file of the checkout but the tests and the prose.
 * Wider than what app.ts imports and bundles today (infra, functions, shared and the locked
 * packages), so a new import can never leave a kept synthesis stale; a change to local/ or ops/
 * costs one synthesis more.
 */
const NOT_SYNTHESIS_INPUTS = [':(exclude)test', ':(exclude)docs', ':(exclude)*.md']

/**
 * Kept syntheses of unchanged inputs, one directory per checkout (`PETSTORE_SYNTH_CACHE=off` makes
 * every run synthesize). Outside the checkout, as a fresh synthesis is: the bundles' source maps
 * name their sources relative to where the assembly is.
 */
const CACHE_DIR = join(
  tmpdir(),
  `petstore-synthesis-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 12)}`,
)

/**
 * A digest of every input file (tracked, or new and not ignored: `git ls-files`), the Node version
 * and platform; undefined without git, which makes the run synthesize.
 */
const inputsDigest = (): string | undefined => {
  const listed = spawnSync(
    'git',
    [
      'ls-files',
      '-z',
      '--cached',
      '--others',
      '--exclude-standard',
      '--',
      '.',
      ...NOT_SYNTHESIS_INPUTS,
    ],
    { cwd: REPO_ROOT },
  )
  if (listed.status !== 0) return undefined
  const hash = createHash('sha256').update(
    `${process.version} ${process.platform} ${process.arch}\0`,
  )
  for (const file of listed.stdout.toString().split('\0').filter(Boolean).sort()) {
    const path = join(REPO_ROOT, file)
    hash.update(`${file}\0${existsSync(path) ? readFileSync(path, 'base64') : 'deleted'}\0`)
  }
  return hash.digest('hex')
}

/**
 * The synthesis of these inputs: the one kept from an earlier run when it succeeded (a synthesis
 * is a function of its inputs: same sources, same locked packages, same context), else a new one,
 * kept for the next run once it succeeds. The cache holds the latest inputs' synthesis only.
 */
const cachedOrNewSynthesis = (): {
  run: AppSynthesisRun
  finished: Promise<void>
  keep: boolean
} => {
  const digest = process.env.PETSTORE_SYNTH_CACHE === 'off' ? undefined : inputsDigest()
  if (digest === undefined) return { ...startSynthesis(), keep: false }
  const outdir = join(CACHE_DIR, digest)
  const run = { outdir, resultFile: `${outdir}.result.json` }
  if (existsSync(run.resultFile)) {
    const kept = JSON.parse(readFileSync(run.resultFile, 'utf8')) as AppSynthesis
    if (kept.status === 0) return { run, finished: Promise.resolve(), keep: true }
  }
  rmSync(CACHE_DIR, { recursive: true, force: true })
  mkdirSync(outdir, { recursive: true })
  const started = startSynthesis(synthesis(outdir))
  return { ...started, keep: true }
}

/**
 * The infra project's only bundled synthesis, shared by every infra test file: infra/app.ts for
 * both stages, cdk-nag enforced by app.ts. Vitest runs every project's global setup before any
 * test, so the synthesis is only started here: it runs beside the other projects' tests, and the
 * infra files wait for it (synth-app.ts). Failures are reported by app-synthesis.test.ts (and by
 * any file that reads the assembly), not thrown here.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runs: { run: AppSynthesisRun; finished: Promise<void>; keep: boolean }[] = []
  const start = () => {
    const started = cachedOrNewSynthesis()
    runs.push(started)
    project.provide('appSynthesis', started.run)
    return started.finished
  }
  start()
  // Watch mode: the code may have changed since the last run; a rerun waits for its synthesis.
  project.onTestsRerun(start)
  return async () => {
    for (const { run, finished, keep } of runs) {
      await finished
      const { status } = JSON.parse(readFileSync(run.resultFile, 'utf8')) as AppSynthesis
      // A failed synthesis is never kept: the next run tries again.
      if (keep && status === 0) continue
      rmSync(run.outdir, { recursive: true, force: true })
      rmSync(run.resultFile, { force: true })
    }
  }
}
