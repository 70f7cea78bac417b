import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stackName } from '#shared/config/stack-names-config.ts'

// The stage's templates as `cdk synth` writes them, for the IAM the local server enforces.

/** A CloudFormation template as the assembly holds it. */
export interface Template {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>
}

/** One stage's data and API stacks, as synthesized. */
export interface SynthesizedStage {
  stage: string
  api: Template
  data: Template
}

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The stage whose templates the local server follows (as `npm start -- --bundles` does). */
export const LOCAL_TEMPLATE_STAGE = 'staging'

/**
 * What a synthesis reads: the CDK app (infra/), what it imports (docs/layout.md: infra/ may
 * import functions/, keys/ and shared/), its context and its locked packages. A change anywhere
 * else (local/, ops/, the tests, the docs) leaves the kept templates current.
 */
const INPUT_ROOMS = ['infra', 'functions', 'keys', 'shared']
const INPUT_FILES = ['cdk.json', 'package.json', 'package-lock.json', 'tsconfig.json']

/** Kept syntheses: beside the type-checker's cache, outside the sources, one per checkout. */
const CACHE_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'petstore-stage-templates')

const filesUnder = async (dir: string): Promise<string[]> => {
  const entries = await readdir(join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(REPO_ROOT.length))
}

/** A digest of every input file's path and content, the stage and the Node that synthesizes. */
export const synthesisInputsDigest = async (stage: string): Promise<string> => {
  const files = [
    ...(await Promise.all(INPUT_ROOMS.map(filesUnder))).flat(),
    ...INPUT_FILES.filter((file) => existsSync(join(REPO_ROOT, file))),
  ].sort()
  const hash = createHash('sha256').update(`${stage} ${process.version} ${process.platform}\0`)
  for (const file of files) {
    hash
      .update(`${file}\0`)
      .update(await readFile(join(REPO_ROOT, file)))
      .update('\0')
  }
  return hash.digest('hex')
}

export class SynthesisError extends Error {
  override name = 'SynthesisError'
}

const readTemplate = async (dir: string, file: string): Promise<Template> => {
  const path = join(dir, file)
  if (!existsSync(path)) {
    throw new SynthesisError(
      `${path} does not exist: synthesize the cloud assembly first (npm run synth writes cdk.out)`,
    )
  }
  return JSON.parse(await readFile(path, 'utf8')) as Template
}

/** A stage's templates in a cloud assembly (cdk.out, or a synthesis of the local server's own). */
export const readAssemblyStage = async (dir: string, stage: string): Promise<SynthesizedStage> => ({
  stage,
  api: await readTemplate(resolve(dir), `${stackName(stage, 'api')}.template.json`),
  data: await readTemplate(resolve(dir), `${stackName(stage, 'data')}.template.json`),
})

/**
 * infra/app.ts for one stage, as `cdk synth -c stage=<stage>` runs it, with no credentials, no
 * bundling (the templates' IAM and variables do not depend on the bundles; a bundle is the
 * costliest part) and without aws-cdk-lib's own template validation (CDK_VALIDATION=false:
 * it reads templates, it changes none, and it took 7 of 11 CPU seconds).
 */
const synthesize = async (stage: string): Promise<SynthesizedStage> => {
  const outdir = await mkdtemp(join(tmpdir(), 'petstore-stage-'))
  const cdkJson = JSON.parse(await readFile(join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>
  }
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('AWS_') && !name.startsWith('CDK_')) env[name] = value
  }
  Object.assign(env, {
    AWS_CONFIG_FILE: join(outdir, 'no-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-credentials'),
    CDK_OUTDIR: outdir,
    CDK_VALIDATION: 'false',
    CDK_CONTEXT_JSON: JSON.stringify({
      ...cdkJson.context,
      stage,
      'aws:cdk:bundling-stacks': [],
    }),
  })
  try {
    const stderr = await new Promise<string>((resolveRun, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
        cwd: REPO_ROOT,
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let output = ''
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      child.once('error', reject)
      child.once('close', (status) =>
        status === 0
          ? resolveRun(output)
          : reject(
              new SynthesisError(
                `the CDK app does not synthesize (the local server enforces the IAM its templates give each function): fix infra/ and retry.\n${output.trim().split('\n').slice(-20).join('\n')}`,
              ),
            ),
      )
    })
    void stderr
    return await readAssemblyStage(outdir, stage)
  } finally {
    await rm(outdir, { recursive: true, force: true })
  }
}

/** How long a start waits for another process's synthesis of the same inputs. */
const LOCK_WAIT_MS = 180_000

/** Runs `make` under a lock directory: one synthesis at a time per checkout, the rest wait. */
const underLock = async <T>(
  lock: string,
  done: () => Promise<T | undefined>,
  make: () => Promise<T>,
): Promise<T> => {
  const started = Date.now()
  for (;;) {
    try {
      await mkdir(lock)
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const kept = await done()
      if (kept !== undefined) return kept
      // A lock older than the longest wait belongs to a process that died.
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs
      if (age > LOCK_WAIT_MS) await rm(lock, { recursive: true, force: true })
      if (Date.now() - started > LOCK_WAIT_MS) {
        throw new SynthesisError(`waited ${LOCK_WAIT_MS / 1000} s for ${lock} to go: remove it`)
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 100))
    }
  }
  try {
    return (await done()) ?? (await make())
  } finally {
    await rm(lock, { recursive: true, force: true })
  }
}

const readKept = async (file: string): Promise<SynthesizedStage | undefined> => {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as SynthesizedStage
  } catch {
    return undefined
  }
}

/**
 * The stage's templates for these sources: kept from an earlier synthesis of the same inputs
 * (a digest of them, about 30 ms), else synthesized now (a few seconds) and kept for the next
 * start or test run. Only the latest inputs' templates are kept.
 */
const synthesizedOnce = new Map<string, Promise<SynthesizedStage>>()

/**
 * The stage's templates for these sources, found once per process (tests start many servers; the
 * sources do not change under a running process).
 */
export const synthesizedStage = (
  stage: string = LOCAL_TEMPLATE_STAGE,
): Promise<SynthesizedStage> => {
  let found = synthesizedOnce.get(stage)
  if (!found) {
    found = findSynthesizedStage(stage)
    synthesizedOnce.set(stage, found)
    // A failure is not kept: the next start tries again.
    found.catch(() => synthesizedOnce.delete(stage))
  }
  return found
}

const findSynthesizedStage = async (stage: string): Promise<SynthesizedStage> => {
  const digest = await synthesisInputsDigest(stage)
  const file = join(CACHE_DIR, `${digest}.json`)
  const kept = await readKept(file)
  if (kept) return kept
  await mkdir(CACHE_DIR, { recursive: true })
  return underLock(
    join(CACHE_DIR, 'synthesis.lock'),
    () => readKept(file),
    async () => {
      const synthesized = await synthesize(stage)
      for (const old of await readdir(CACHE_DIR)) {
        if (old.endsWith('.json')) await rm(join(CACHE_DIR, old), { force: true })
      }
      await writeFile(`${file}.partial`, JSON.stringify(synthesized))
      await rename(`${file}.partial`, file)
      return synthesized
    },
  )
}
