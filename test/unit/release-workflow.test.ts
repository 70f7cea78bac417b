import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { releaseStackName } from '#infra/stacks/petstore-release-stack.ts'
import { ROOT } from '#test/support/local-server.ts'

/**
 * The release pipeline (.github/workflows/release.yml; `npm run lint` validates it against the
 * workflow schema): what it runs is the project's own npm scripts, it synthesizes once, and each
 * deploy gets the assembly whose bundles were tested; production is a plan before the gate (its
 * own job, environment and role) and an apply after it, of the very change sets planned. The
 * supply chain rules (SHA pins, install scripts, credentials): workflow-supply-chain.test.ts.
 */
interface Step {
  id?: string
  uses?: string
  run?: string
  with?: Record<string, unknown>
}
interface Job {
  if?: string
  needs?: string | string[]
  environment?: string
  concurrency?: { group: string; 'cancel-in-progress': boolean }
  permissions?: Record<string, string>
  outputs?: Record<string, string>
  steps: (Step & { 'working-directory'?: string; env?: Record<string, string> })[]
}
interface Workflow {
  on: Record<string, unknown>
  permissions: Record<string, string>
  concurrency?: { group: string; 'cancel-in-progress': string | boolean }
  jobs: Record<string, Job>
}

const workflowFile = (name: string): Workflow =>
  parse(readFileSync(join(ROOT, '.github/workflows', name), 'utf8')) as Workflow
const workflow = workflowFile('release.yml')
const rollback = workflowFile('rollback.yml')
const scripts = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
).scripts
const { jobs } = workflow
const job = (name: string): Job => {
  const found = jobs[name]
  if (!found) throw new Error(`the workflow has no job ${name}`)
  return found
}
const runs = (name: string): string[] => job(name).steps.flatMap((step) => step.run ?? [])
const needs = (name: string): string[] => [job(name).needs ?? []].flat()
/** The npm script a `run:` line calls (`npm test` is `test`; `npm ci` and `npm rebuild` are npm's). */
const scriptOf = (line: string): string | undefined =>
  /^npm (?:run (?:-s )?([\w:-]+)|(test|ci|rebuild))(?:\s|$)/.exec(line)?.slice(1).find(Boolean)
/** A GitHub Actions expression as the workflow writes it. */
const expression = (inner: string) => `\${{ ${inner} }}`
const DIGEST = expression('needs.assembly.outputs.digest')

const indexOf = (name: string, predicate: (step: Step) => boolean): number =>
  job(name).steps.findIndex(predicate)

describe('the release workflow', () => {
  it('runs nothing but npm ci and npm scripts that exist', () => {
    const rollbackRuns = Object.values(rollback.jobs).flatMap((job) =>
      job.steps.flatMap((step) => step.run ?? []),
    )
    for (const line of [...Object.keys(jobs).flatMap(runs), ...rollbackRuns]) {
      const script = scriptOf(line)
      expect(script, line).toBeDefined()
      if (script !== 'ci' && script !== 'rebuild') {
        expect(scripts, line).toHaveProperty(script as string)
      }
    }
  })

  it("tests every pull request and every push with the README's test command", () => {
    expect(Object.keys(workflow.on).sort()).toEqual(['pull_request', 'push'])
    expect(job('test').if).toBeUndefined()
    expect(runs('test')).toEqual(['npm ci', 'npm test'])
    expect(workflow.permissions).toEqual({ contents: 'read' })
  })

  it('synthesizes once, on main, then tests the bundles of that assembly before handing it on', () => {
    const synthesizing = Object.keys(jobs).filter((name) =>
      runs(name).some((line) => /^(synth|deploy:.*)$/.test(scriptOf(line) ?? '')),
    )
    expect(synthesizing).toEqual(['assembly'])
    expect(job('assembly').if).toBe("github.event_name == 'push'")
    expect(needs('assembly')).toEqual(['test'])
    const synth = indexOf('assembly', (step) => step.run === 'npm run synth')
    const bundles = indexOf('assembly', (step) => step.run === 'npm run test:bundles')
    const upload = indexOf(
      'assembly',
      (step) => step.uses?.startsWith('actions/upload-artifact') === true,
    )
    expect(synth).toBeGreaterThan(-1)
    expect(bundles).toBeGreaterThan(synth)
    expect(upload).toBeGreaterThan(bundles)
    expect(job('assembly').steps[upload]?.with).toMatchObject({
      name: 'cloud-assembly',
      path: 'cdk.out',
    })
    expect(scripts['test:bundles']).toContain(`PETSTORE_BUNDLES=\${PETSTORE_BUNDLES:-cdk.out}`)
    expect(job('assembly').outputs?.digest).toBe(expression('steps.digest.outputs.digest'))
  })

  it('deploys staging from that assembly, checked by its digest, then smokes it', () => {
    const stage = 'staging'
    expect(needs(stage)).toEqual(['assembly'])
    expect(job(stage).environment).toBe(stage)
    expect(job(stage).permissions).toEqual({ contents: 'read', 'id-token': 'write' })
    const download = indexOf(
      stage,
      (step) => step.uses?.startsWith('actions/download-artifact') === true,
    )
    const check = indexOf(stage, (step) => step.run?.startsWith('npm run release:digest') === true)
    const credentials = indexOf(
      stage,
      (step) => step.uses?.startsWith('aws-actions/configure-aws-credentials') === true,
    )
    const deploy = indexOf(stage, (step) => step.run === `npm run release:deploy:${stage}`)
    const smoke = indexOf(
      stage,
      (step) => step.run?.startsWith(`npm run smoke -- --stage ${stage}`) === true,
    )
    expect([download, check, credentials, deploy, smoke].every((index) => index >= 0)).toBe(true)
    expect(download < check && check < credentials && credentials < deploy && deploy < smoke).toBe(
      true,
    )
    expect(job(stage).steps[download]?.with).toEqual({ name: 'cloud-assembly', path: 'cdk.out' })
    expect(job(stage).steps[check]?.run).toBe(
      `npm run release:digest -- cdk.out --expect "${DIGEST}"`,
    )
    // OIDC: a role, never keys.
    expect(Object.keys(job(stage).steps[credentials]?.with ?? {}).sort()).toEqual([
      'aws-region',
      'role-to-assume',
    ])
  })

  it("deploys staging's stacks from cdk.out without a prompt, and never a release stack", () => {
    const command = scripts['release:deploy:staging'] ?? ''
    expect(command).toMatch(/^cdk deploy --app cdk\.out /)
    expect(command).toContain('--require-approval never')
    const pattern = /'([^']+)'$/.exec(command)?.[1] ?? ''
    expect(pattern).toBe('petstore-staging-*')
    const glob = new RegExp(`^${pattern.replaceAll('*', '.*')}$`)
    expect(glob.test('petstore-staging-api')).toBe(true)
    expect(glob.test('petstore-staging-data')).toBe(true)
    expect(glob.test(releaseStackName('staging'))).toBe(false)
    // Production is never deployed in one step: a plan, then an apply.
    expect(Object.keys(scripts).filter((name) => name.startsWith('release:deploy:'))).toEqual([
      'release:deploy:staging',
    ])
  })

  it("prepares production's change sets before the gate, in a job of its own that can execute none", () => {
    const plan = job('production-plan')
    expect(needs('production-plan')).toEqual(['assembly', 'staging'])
    // Not the production environment: no reviewer is asked for a plan; its own role and subject.
    expect(plan.environment).toBe('production-plan')
    expect(plan.permissions).toEqual({ contents: 'read', 'id-token': 'write' })
    const credentials = plan.steps.find((step) =>
      step.uses?.startsWith('aws-actions/configure-aws-credentials'),
    )
    expect(credentials?.with?.['role-to-assume']).toBe(expression('vars.AWS_PLAN_ROLE_ARN'))
    const check = indexOf(
      'production-plan',
      (step) => step.run?.startsWith('npm run release:digest') === true,
    )
    const prepare = indexOf('production-plan', (step) => step.id === 'plan')
    const upload = indexOf(
      'production-plan',
      (step) => step.uses?.startsWith('actions/upload-artifact') === true,
    )
    expect(check).toBeGreaterThan(-1)
    expect(prepare).toBeGreaterThan(check)
    expect(upload).toBeGreaterThan(prepare)
    const line = plan.steps[prepare]?.run ?? ''
    expect(line).toMatch(/^npm run release:plan -- --stage production --app cdk\.out /)
    for (const part of [
      `--digest "${DIGEST}"`,
      '--summary "$GITHUB_STEP_SUMMARY"',
      '--out release-plan.json',
      '--github-output',
      `--change-set-name "petstore-${expression('github.run_id')}-${expression('github.run_attempt')}"`,
    ]) {
      expect(line).toContain(part)
    }
    expect(scripts['release:plan']).toBe('node --import tsx ops/release/release-plan-cli.ts plan')
    expect(plan.steps[upload]?.with).toMatchObject({
      name: 'production-plan',
      path: 'release-plan.json',
    })
    expect(plan.outputs?.approval).toBe(expression('steps.plan.outputs.approval'))
  })

  it('executes those change sets only after the gate, and only where GitHub enforces reviewers', () => {
    const apply = job('production')
    expect(needs('production')).toEqual(['assembly', 'production-plan'])
    expect(apply.if).toBe("needs.production-plan.outputs.approval == 'reviewers'")
    expect(apply.environment).toBe('production')
    expect(apply.permissions).toEqual({ contents: 'read', 'id-token': 'write' })
    const downloads = apply.steps.filter((step) =>
      step.uses?.startsWith('actions/download-artifact'),
    )
    expect(downloads.map((step) => step.with)).toEqual([
      { name: 'cloud-assembly', path: 'cdk.out' },
      { name: 'production-plan', path: 'production-plan' },
    ])
    const check = indexOf(
      'production',
      (step) => step.run === `npm run release:digest -- cdk.out --expect "${DIGEST}"`,
    )
    const credentials = indexOf(
      'production',
      (step) => step.uses?.startsWith('aws-actions/configure-aws-credentials') === true,
    )
    const execute = indexOf(
      'production',
      (step) =>
        step.run ===
        'npm run release:apply -- --plan production-plan/release-plan.json --app cdk.out',
    )
    const smoke = indexOf(
      'production',
      (step) => step.run?.startsWith('npm run smoke -- --stage production') === true,
    )
    expect([check, credentials, execute, smoke].every((index) => index >= 0)).toBe(true)
    expect(check < credentials && credentials < execute && execute < smoke).toBe(true)
    expect(apply.steps[credentials]?.with?.['role-to-assume']).toBe(
      expression('vars.AWS_DEPLOY_ROLE_ARN'),
    )
    // Nothing in the workflow deploys production but the apply of a plan.
    const everyLine = Object.keys(jobs).flatMap(runs).join('\n')
    expect(everyLine).not.toMatch(/cdk deploy|release:deploy:production|execute-change-set/)
  })

  it('tags the commit once production is smoked, naming the assembly', () => {
    expect(needs('tag')).toEqual(['assembly', 'production'])
    expect(job('tag').permissions).toEqual({ contents: 'write' })
    // A re-run of production re-runs this: release:tag adds nothing then (release-tag.test.ts).
    expect(runs('tag')).toContain(`npm run release:tag -- --digest "${DIGEST}"`)
  })

  it("lets no release waiting for approval hold up another push's tests", () => {
    // Per run on main, so a push's test and assembly jobs never queue behind a release.
    expect(workflow.concurrency?.group).toBe(
      expression(
        "github.event_name == 'pull_request' && format('pr-{0}', github.event.number) || format('run-{0}', github.run_id)",
      ),
    )
    expect(workflow.concurrency?.['cancel-in-progress']).toBe(
      expression("github.event_name == 'pull_request'"),
    )
    for (const name of ['test', 'assembly', 'tag']) expect(job(name).concurrency).toBeUndefined()
    // Each stage's deploys, one at a time, never cancelled once started; production's plan is in
    // production's group, so no plan is made while another release's apply waits or runs.
    for (const [name, group] of [
      ['staging', 'release-staging'],
      ['production-plan', 'release-production'],
      ['production', 'release-production'],
    ]) {
      expect(job(name as string).concurrency).toEqual({ group, 'cancel-in-progress': false })
    }
  })
})

describe('the rollback workflow (within the artifacts 90 days)', () => {
  const plan = rollback.jobs.plan as Job
  const production = rollback.jobs.production as Job
  const index = (job: Job, predicate: (step: Job['steps'][number]) => boolean) =>
    job.steps.findIndex(predicate)

  it('is started by hand, with the release tag and the run that made it', () => {
    expect(Object.keys(rollback.on)).toEqual(['workflow_dispatch'])
    const inputs = (rollback.on.workflow_dispatch as { inputs: Record<string, unknown> }).inputs
    expect(Object.keys(inputs).sort()).toEqual(['run-id', 'tag'])
    expect(Object.keys(rollback.jobs)).toEqual(['plan', 'production'])
    expect(rollback.permissions).toEqual({ contents: 'read' })
  })

  it("plans in production-plan's environment, with the plan role, once the artifact is the assembly the tag names", () => {
    expect(plan.environment).toBe('production-plan')
    expect(plan.concurrency).toEqual(job('production').concurrency)
    expect(plan.permissions).toEqual({ contents: 'read', actions: 'read', 'id-token': 'write' })
    const download = index(
      plan,
      (step) => step.uses?.startsWith('actions/download-artifact') === true,
    )
    const check = index(plan, (step) => step.run?.startsWith('npm run release:digest') === true)
    const credentials = index(
      plan,
      (step) => step.uses?.startsWith('aws-actions/configure-aws-credentials') === true,
    )
    const prepare = index(plan, (step) => step.run?.startsWith('npm run release:plan') === true)
    expect([download, check, credentials, prepare].every((i) => i >= 0)).toBe(true)
    expect(download < check && check < credentials && credentials < prepare).toBe(true)
    expect(plan.steps[download]?.with).toEqual({
      name: 'cloud-assembly',
      path: 'released/cdk.out',
      'run-id': expression('inputs.run-id'),
      'github-token': expression('github.token'),
    })
    // The input reaches the shell as a variable, never spliced into the script.
    expect(plan.steps[check]).toMatchObject({
      run: 'npm run release:digest -- released/cdk.out --expect-tag "$TAG" --github-output',
      env: { TAG: expression('inputs.tag') },
    })
    expect(plan.steps[credentials]?.with?.['role-to-assume']).toBe(
      expression('vars.AWS_PLAN_ROLE_ARN'),
    )
    expect(plan.steps[prepare]?.run).toContain('--app released/cdk.out')
    expect(plan.steps[prepare]?.run).toContain(
      `--digest "${expression('steps.digest.outputs.digest')}"`,
    )
    expect(plan.steps[prepare]?.run).toContain('--assembly-run "$RUN_ID"')
    expect(plan.steps[prepare]?.env).toEqual({ RUN_ID: expression('inputs.run-id') })
  })

  it("applies the plan through production's gate and its group, then smokes with the released commit's tools", () => {
    expect(production.needs).toBe('plan')
    expect(production.if).toBe("needs.plan.outputs.approval == 'reviewers'")
    expect(production.environment).toBe('production')
    expect(production.concurrency).toEqual(job('production').concurrency)
    const check = index(
      production,
      (step) => step.run?.startsWith('npm run release:digest') === true,
    )
    const execute = index(
      production,
      (step) =>
        step.run ===
        'npm run release:apply -- --plan production-plan/release-plan.json --app released/cdk.out',
    )
    const smoke = index(
      production,
      (step) => step.run?.startsWith('npm run smoke -- --stage production') === true,
    )
    expect([check, execute, smoke].every((i) => i >= 0)).toBe(true)
    expect(check < execute && execute < smoke).toBe(true)
    expect(production.steps[check]?.run).toBe(
      `npm run release:digest -- released/cdk.out --expect "${expression('needs.plan.outputs.digest')}"`,
    )
    const released = production.steps.find((step) => step.with?.path === 'released')
    expect(released?.with?.ref).toBe(`refs/tags/${expression('inputs.tag')}`)
    expect(production.steps[smoke]?.['working-directory']).toBe('released')
    expect(production.steps[smoke]?.env).toEqual({
      PETSTORE_SMOKE_KEY: expression('secrets.SMOKE_API_KEY'),
    })
    expect(production.steps.some((step) => /release:deploy|cdk deploy/.test(step.run ?? ''))).toBe(
      false,
    )
  })
})

describe('the hand deploys and the release stacks', () => {
  it.each(['staging', 'production'])(
    'deploy:%s deploys what the pipeline deploys, never a release stack',
    (stage) => {
      expect(scripts[`deploy:${stage}`]).toBe(`cdk deploy -c stage=${stage} 'petstore-${stage}-*'`)
      expect(scripts[`release:setup:${stage}`]).toBe(
        `cdk deploy -c stage=${stage} ${releaseStackName(stage)}`,
      )
    },
  )
})
