// `npm run release:plan`, `npm run release:apply`, `npm run release:summary`: production as a plan, then an apply.
import { spawn } from 'node:child_process'
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CloudFormationClient } from '@aws-sdk/client-cloudformation'
import { verifyAssembly } from './assembly-digest.ts'
import { renderPlanSummary } from './change-set-summary.ts'
import {
  applyInstructions,
  applyPlan,
  approvalFromCdkJson,
  preparePlan,
  type RunCommand,
  readPlan,
} from './release-plan.ts'
import { cdkReplacementRule } from './replacement-rules.ts'
import { type StackTemplate, templateChanges } from './template-changes.ts'

/**
 * `plan --stage production --app cdk.out --change-set-name NAME --digest D [--out plan.json] [--summary FILE] [--origin URL] [--assembly-run ID] [--github-output]`:
 *   makes the stage's change sets (release-plan.ts), writes the plan and prints the approver's
 *   summary (also appended to FILE: the workflow gives $GITHUB_STEP_SUMMARY), saying how the plan
 *   is applied as cdk.json's productionApproval says (`--assembly-run`: the run whose artifact
 *   the assembly is, when not this one: a rollback); `--github-output` writes `approval=…` for the
 *   next job.
 * `apply --plan plan.json --app cdk.out`: checks the assembly against the plan's digest, then
 *   executes exactly the planned change sets, refusing a stale one.
 * `summary --deployed DIR --app DIR --stage production`: the same summary offline, from an
 *   assembly standing in for what is deployed (the release dry run).
 * Exit codes: 0 done, 1 refused or failed, 2 a usage error.
 */
const USAGE = [
  'usage: npm run release:plan -- --stage <stage> --app <assembly> --change-set-name <name> --digest <digest> [--out <plan.json>] [--summary <file>] [--origin <url>] [--assembly-run <id>] [--github-output]',
  '       npm run release:apply -- --plan <plan.json> --app <assembly>',
  '       npm run release:summary -- --deployed <assembly> --app <assembly> --stage <stage>',
].join('\n')

const fail = (message: string, code: number): never => {
  process.stderr.write(`release: ${message}\n`)
  process.exit(code)
}

interface Manifest {
  artifacts: Record<
    string,
    { type: string; environment?: string; properties?: { templateFile?: string } }
  >
}

/** The stage's stacks in an assembly, with the Region they deploy to and their templates. */
const stageStacks = (app: string, stage: string) => {
  const manifest = JSON.parse(readFileSync(join(app, 'manifest.json'), 'utf8')) as Manifest
  const stacks = Object.entries(manifest.artifacts)
    .filter(
      ([name, artifact]) =>
        artifact.type === 'aws:cloudformation:stack' && name.startsWith(`petstore-${stage}-`),
    )
    .map(([name, artifact]) => ({
      name,
      region: artifact.environment?.split('/').at(-1),
      template: join(app, artifact.properties?.templateFile ?? `${name}.template.json`),
    }))
  if (stacks.length === 0) fail(`${app} holds no petstore-${stage}-* stack`, 2)
  return stacks
}

const run: RunCommand = (command, args) =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' })
    child.on('close', (code) => resolve(code ?? 1))
    child.on('error', () => resolve(1))
  })

const client = (region: string | undefined) =>
  new CloudFormationClient(region && region !== 'unknown-region' ? { region } : {})

/** A workflow run's id, the end of its address. */
const runId = (origin: string | undefined) => origin?.split('/').at(-1)

const plan = async (values: Record<string, string | undefined>) => {
  const { stage, app, digest } = values
  const name = values['change-set-name']
  if (!stage || !app || !name || !digest)
    return fail(`plan needs --stage, --app, --change-set-name and --digest\n${USAGE}`, 2)
  const approval = approvalFromCdkJson(readFileSync('cdk.json', 'utf8'))
  if (values.githubOutput) {
    const output = process.env.GITHUB_OUTPUT
    if (!output) return fail('--github-output needs GITHUB_OUTPUT (set by GitHub Actions)', 2)
    appendFileSync(output, `approval=${approval}\n`)
  }
  const { matches, actual } = verifyAssembly(app, digest)
  if (!matches)
    return fail(`${app} is not the tested assembly (${actual.digest}, expected ${digest})`, 1)
  const stacks = stageStacks(app, stage)
  const result = await preparePlan({
    cfn: client(stacks[0]?.region),
    run,
    app,
    stage,
    stacks: stacks.map((stack) => stack.name),
    changeSetName: name,
    digest,
    origin: values.origin,
  })
  writeFileSync(values.out ?? 'release-plan.json', `${JSON.stringify(result.plan, null, 2)}\n`)
  const summary = renderPlanSummary({
    title: `${stage}${values.origin ? `, ${values.origin}` : ''}`,
    changeSets: result.descriptions,
    footer: applyInstructions(approval, {
      planRun: runId(values.origin),
      assemblyRun: values['assembly-run'] ?? runId(values.origin),
      digest,
    }),
  })
  process.stdout.write(summary)
  if (values.summary) appendFileSync(values.summary, summary)
}

const apply = async (values: Record<string, string | undefined>) => {
  if (!values.plan || !values.app) return fail(`apply needs --plan and --app\n${USAGE}`, 2)
  const planned = readPlan(readFileSync(values.plan, 'utf8'))
  const { matches, actual } = verifyAssembly(values.app, planned.digest)
  if (!matches)
    return fail(
      `${values.app} is not the planned assembly (${actual.digest}, planned ${planned.digest})`,
      1,
    )
  const stacks = stageStacks(values.app, planned.stage)
  const { executed } = await applyPlan({
    cfn: client(stacks[0]?.region),
    run,
    app: values.app,
    plan: planned,
  })
  process.stdout.write(`applied: ${executed.join(', ') || 'nothing to execute'}\n`)
}

const summary = (values: Record<string, string | undefined>) => {
  const { deployed, app, stage } = values
  if (!deployed || !app || !stage)
    return fail(`summary needs --deployed, --app and --stage\n${USAGE}`, 2)
  const replaces = cdkReplacementRule()
  const before = new Map(stageStacks(deployed, stage).map((stack) => [stack.name, stack.template]))
  const changeSets = stageStacks(app, stage).map((stack) => {
    const read = (file: string | undefined) =>
      file ? (JSON.parse(readFileSync(file, 'utf8')) as StackTemplate) : undefined
    return templateChanges(
      stack.name,
      read(before.get(stack.name)),
      read(stack.template) ?? {},
      replaces,
    )
  })
  process.stdout.write(
    renderPlanSummary({
      title: `${stage}, offline: ${app} against ${deployed} as deployed`,
      changeSets,
    }),
  )
}

const main = async () => {
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        ...Object.fromEntries(
          [
            'stage',
            'app',
            'change-set-name',
            'digest',
            'out',
            'summary',
            'origin',
            'assembly-run',
            'plan',
            'deployed',
          ].map((name) => [name, { type: 'string' as const }]),
        ),
        'github-output': { type: 'boolean' as const },
      },
    })
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`, 2)
  }
  const { 'github-output': githubOutput, ...strings } = parsed.values
  const values = {
    ...(strings as Record<string, string | undefined>),
    githubOutput: githubOutput ? 'yes' : undefined,
  }
  const [command] = parsed.positionals
  try {
    if (command === 'plan') await plan(values)
    else if (command === 'apply') await apply(values)
    else if (command === 'summary') summary(values)
    else fail(`plan, apply or summary\n${USAGE}`, 2)
  } catch (error) {
    fail((error as Error).message, 1)
  }
}

await main()
