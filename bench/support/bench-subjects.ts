import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { build, type Metafile } from 'esbuild'
import { AUTHORIZER_ENTRY, functionEntry } from '#functions/function-entries.ts'
import { BUNDLE_FILE, FUNCTION_BUNDLING } from '#infra/config/bundling-config.ts'
import { REPO_ROOT } from '#infra/constructs/petstore-function-construct.ts'
import { type OperationId, ROUTES } from '#shared/config/routes-config.ts'
import { floorEntryOf, missingFloor } from './bench-floors.ts'

/** Every function that serves a request: each route's (the route table) and the authorizer. */
export type Operation = OperationId | 'authorizer'
export const OPERATIONS: readonly Operation[] = [
  ...ROUTES.map((route) => route.operationId),
  'authorizer',
]

export type SubjectKind = 'function' | 'floor' | 'floor + limiter write' | 'baseline'

export interface Subject {
  label: string
  kind: SubjectKind
  operation: Operation
  /** Where its index.mjs is. */
  dir: string
  env: Record<string, string>
  /** The function's memory as the template sets it (floors and baselines: their function's). */
  memoryMb: number
}

/** What esbuild says a bundle is made of (the bench bundles every subject with a metafile). */
export interface BundleFacts {
  bytes: number
  /** Input modules in the bundle: the project's files and every package file it pulls in. */
  modules: number
  metafile: Metafile
}

const log = (message: string) => process.stderr.write(`${message}\n`)

/** Bundles one entry with the functions' esbuild options (infra/config/bundling-config.ts). */
export const bundleEntry = async (
  entry: string,
  outdir: string,
  root = REPO_ROOT,
): Promise<BundleFacts> => {
  const { banner, alias, ...options } = FUNCTION_BUNDLING
  // A baseline tree from before an alias's file existed was bundled without it.
  const aliases = Object.entries(alias).filter(([, to]) => existsSync(join(root, to)))
  const result = await build({
    ...options,
    alias: Object.fromEntries(aliases),
    mainFields: [...options.mainFields],
    banner: { js: banner },
    entryPoints: [join(root, entry)],
    absWorkingDir: root,
    bundle: true,
    outfile: join(outdir, BUNDLE_FILE),
    metafile: true,
    logLevel: 'warning',
  })
  const output = Object.entries(result.metafile.outputs).find(([name]) => name.endsWith('.mjs'))
  if (!output) throw new Error(`esbuild wrote no bundle for ${entry}`)
  return {
    bytes: output[1].bytes,
    modules: Object.keys(output[1].inputs).length,
    metafile: result.metafile,
  }
}

const entryOf = (operation: Operation): string => {
  if (operation === 'authorizer') return AUTHORIZER_ENTRY
  const route = ROUTES.find((candidate) => candidate.operationId === operation)
  if (!route) throw new Error(`no route for ${operation}`)
  return functionEntry(route)
}

/**
 * A variable's value as CloudFormation would resolve it: a reference becomes a placeholder, a
 * dynamic reference to a Secrets Manager secret a secret's shape (64 letters), a join the join of
 * its parts (KEY_MAC_SECRETS is `<version>:<secret>`).
 */
const deployedValue = (value: unknown, name: string): string => {
  if (typeof value === 'string') return value
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
  if (!join) return `bench-${name.toLowerCase()}`
  const text = join[1].map((part) => deployedValue(part, name)).join(join[0])
  return text.startsWith('{{resolve:secretsmanager:') ? 'b'.repeat(64) : text
}

interface TemplateFunction {
  Type: string
  Properties: {
    Code: { S3Key: string }
    MemorySize?: number
    Environment?: { Variables: Record<string, unknown> }
  }
}

/**
 * `cdk synth` of a checkout (infra/app.ts as the CDK CLI runs it, its cdk.json context, no AWS
 * credentials) into `outdir`: every function bundled as that checkout deploys it.
 */
const synthesize = (root: string, outdir: string): void => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) if (name.startsWith('AWS_')) delete env[name]
  const cdkJson = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: object }
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: root,
    encoding: 'utf8',
    env: {
      ...env,
      AWS_CONFIG_FILE: join(outdir, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(outdir, 'no-credentials'),
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify(cdkJson.context),
    },
  })
  if (run.status !== 0) throw new Error(`cdk synth of ${root} failed:\n${run.stderr.slice(-3000)}`)
}

/**
 * The production stage's functions of a checkout as synthesized: asset directory, environment
 * and memory, and what each bundle is made of. The bench also bundles each entry itself (for
 * esbuild's metafile); for this checkout it stops if that bundle is not the size of the deployed
 * one, so the module counts are about what is deployed.
 */
export const deployedFunctions = async (
  { root, work, label }: { root: string; work: string; label?: (operation: Operation) => string },
  facts: Map<string, BundleFacts>,
): Promise<Subject[]> => {
  const outdir = join(work, `cdk-${label ? 'baseline' : 'out'}`)
  log(
    `synthesizing ${root === REPO_ROOT ? 'the CDK app' : root} (bundles every function as deployed)...`,
  )
  synthesize(root, outdir)
  const templateFile = readdirSync(outdir).find((name) =>
    /production-api\.template\.json$/.test(name),
  )
  if (!templateFile) throw new Error('no production API template in the cloud assembly')
  const template = JSON.parse(readFileSync(join(outdir, templateFile), 'utf8')) as {
    Resources: Record<string, TemplateFunction>
  }
  const subjects: Subject[] = []
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue
    const props = resource.Properties
    const variables = props.Environment?.Variables ?? {}
    const operation = variables.POWERTOOLS_SERVICE_NAME as Operation
    if (!OPERATIONS.includes(operation)) continue
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(variables)) {
      // Table names and secrets are CloudFormation references until deployed.
      env[name] = deployedValue(value, name)
    }
    const asset = `asset.${props.Code.S3Key.replace(/\.zip$/, '')}`
    subjects.push({
      label: label ? label(operation) : operation,
      kind: label ? 'baseline' : 'function',
      operation,
      dir: join(outdir, asset),
      env,
      // CloudFormation's default when the template omits it.
      memoryMb: props.MemorySize ?? 128,
    })
  }
  // Every function is measured: one the template lacks is an error, never a skipped row.
  const missing = OPERATIONS.filter((operation) => !subjects.some((s) => s.operation === operation))
  if (missing.length > 0) {
    throw new Error(`no function in the production template for ${missing.join(', ')}`)
  }
  subjects.sort((a, b) => OPERATIONS.indexOf(a.operation) - OPERATIONS.indexOf(b.operation))
  for (const subject of subjects) {
    const own = await bundleEntry(
      entryOf(subject.operation),
      join(work, `own-${subject.label}`),
      root,
    )
    const deployed = readFileSync(join(subject.dir, BUNDLE_FILE)).length
    if (!label && own.bytes !== deployed) {
      throw new Error(
        `${subject.label}: the bench's bundle (${own.bytes} B) differs from the deployed one (${deployed} B)`,
      )
    }
    facts.set(subject.label, { ...own, bytes: deployed })
  }
  return subjects
}

/**
 * A function of the production stage that serves no request, as `deployedFunctions` synthesized
 * it into `work` (call that first): its deployed bundle's size, and its modules as the bench's own
 * bundle of `entry` counts them (which must be the deployed one's size).
 */
export const deployedBackgroundBundle = async (
  work: string,
  service: string,
  entry: string,
): Promise<BundleFacts> => {
  const outdir = join(work, 'cdk-out')
  const templateFile = readdirSync(outdir).find((name) =>
    /production-api\.template\.json$/.test(name),
  )
  const template = JSON.parse(readFileSync(join(outdir, templateFile ?? ''), 'utf8')) as {
    Resources: Record<string, TemplateFunction>
  }
  const fn = Object.values(template.Resources).find(
    (resource) =>
      resource.Type === 'AWS::Lambda::Function' &&
      resource.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === service,
  )
  if (!fn) throw new Error(`no ${service} function in the production template`)
  const dir = join(outdir, `asset.${fn.Properties.Code.S3Key.replace(/\.zip$/, '')}`)
  const deployed = readFileSync(join(dir, BUNDLE_FILE)).length
  const own = await bundleEntry(entry, join(work, `own-${service}`))
  if (own.bytes !== deployed) {
    throw new Error(
      `${service}: the bench's bundle (${own.bytes} B) differs from the deployed one (${deployed} B)`,
    )
  }
  return { ...own, bytes: deployed }
}

/**
 * Each function's floor: a bare handler making only that operation's SDK calls, at
 * `bench/floors/<fn>-floor.ts` (the authorizer's `authorizer-floor.ts`). A function without one
 * stops the bench, naming the file to write.
 */
const existingFloorOf = (operation: Operation): string => {
  const entry = floorEntryOf(operation)
  if (!existsSync(join(REPO_ROOT, entry))) throw new Error(missingFloor(operation))
  return entry
}

/**
 * The floors, and for the rate-limited operations the same floors making the limiter's one write
 * too (not the authorizer: it is not limited). Floors run with their function's environment minus
 * NODE_OPTIONS: a bare handler sets none.
 */
export const floorsFor = async (
  functions: Subject[],
  work: string,
  facts: Map<string, BundleFacts>,
): Promise<Subject[]> => {
  const floors: Subject[] = []
  for (const fn of functions) {
    const dir = join(work, `floor-${fn.operation}`)
    const { NODE_OPTIONS: _none, ...env } = fn.env
    const floor: Subject = { ...fn, label: `${fn.operation} floor`, kind: 'floor', dir, env }
    facts.set(floor.label, await bundleEntry(existingFloorOf(fn.operation), dir))
    floors.push(floor)
    if (fn.operation === 'authorizer') continue
    const limited: Subject = {
      ...floor,
      label: `${fn.operation} floor + limiter write`,
      kind: 'floor + limiter write',
      env: { ...env, FLOOR_WITH_LIMITER: '1' },
    }
    facts.set(limited.label, facts.get(floor.label) as BundleFacts)
    floors.push(limited)
  }
  return floors
}

/**
 * `BENCH_BASELINE=<git ref>`: the functions as that commit deployed them, synthesized from a copy
 * of its tree (git archive; this checkout's node_modules) and run with the environment its
 * template gives them, measured in the same run as the rest: a before and after from one set of
 * conditions. Returns the copy's root too (the local server's baseline runs from it).
 */
export const baselineOf = async (
  ref: string,
  work: string,
  facts: Map<string, BundleFacts>,
): Promise<{ root: string; subjects: Subject[] }> => {
  const root = join(work, 'baseline-tree')
  mkdirSync(root, { recursive: true })
  const archive = spawnSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'sh', ref, root], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  })
  if (archive.status !== 0) throw new Error(`git archive ${ref} failed:\n${archive.stderr}`)
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(root, 'node_modules'))
  const label = (operation: Operation) => `${operation} at ${ref}`
  return { root, subjects: await deployedFunctions({ root, work, label }, facts) }
}
