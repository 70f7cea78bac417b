import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { releaseStackName } from '#infra/stacks/petstore-release-stack.ts'
import { ROOT } from '#test/support/local-server.ts'

/**
 * The release pipeline (.github/workflows/release.yml; `npm run lint` validates it against the
 * workflow schema): what it runs is the project's own npm scripts, it synthesizes once, and each
 * deploy gets the assembly whose bundles were tested, production the one staging was smoked on.
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
/** The npm script a `run:` line calls (`npm test` is `test`). */
const scriptOf = (line: string): string | undefined =>
  /^npm (?:run (?:-s )?([\w:-]+)|(test|ci))(?:\s|$)/.exec(line)?.slice(1).find(Boolean)
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
      if (script !== 'ci') expect(scripts, line).toHaveProperty(script as string)
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

  it.each([
    ['staging', ['assembly']],
    ['production', ['assembly', 'staging']],
  ])('deploys %s from that assembly, checked by its digest, then smokes it', (stage, after) => {
    expect(needs(stage)).toEqual(after)
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

  it.each(['staging', 'production'])(
    "deploys %s's stacks from cdk.out without a prompt, and never a release role",
    (stage) => {
      const command = scripts[`release:deploy:${stage}`] ?? ''
      expect(command).toMatch(/^cdk deploy --app cdk\.out /)
      expect(command).toContain('--require-approval never')
      const pattern = /'([^']+)'$/.exec(command)?.[1] ?? ''
      expect(pattern).toBe(`petstore-${stage}-*`)
      const glob = new RegExp(`^${pattern.replaceAll('*', '.*')}$`)
      expect(glob.test(`petstore-${stage}-api`)).toBe(true)
      expect(glob.test(`petstore-${stage}-data`)).toBe(true)
      expect(glob.test(releaseStackName(stage))).toBe(false)
    },
  )

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
    // Each stage's deploys, one at a time, never cancelled once started.
    for (const stage of ['staging', 'production']) {
      expect(job(stage).concurrency).toEqual({
        group: `release-${stage}`,
        'cancel-in-progress': false,
      })
    }
  })
})

describe('the rollback workflow (within the artifacts 90 days)', () => {
  const production = rollback.jobs.production as Job
  const index = (predicate: (step: Job['steps'][number]) => boolean) =>
    production.steps.findIndex(predicate)

  it('is started by hand, with the release tag and the run that made it', () => {
    expect(Object.keys(rollback.on)).toEqual(['workflow_dispatch'])
    const inputs = (rollback.on.workflow_dispatch as { inputs: Record<string, unknown> }).inputs
    expect(Object.keys(inputs).sort()).toEqual(['run-id', 'tag'])
    expect(Object.keys(rollback.jobs)).toEqual(['production'])
    expect(rollback.permissions).toEqual({ contents: 'read' })
  })

  it("goes through production's gate and its deploy group, with production's role", () => {
    expect(production.environment).toBe('production')
    expect(production.concurrency).toEqual(job('production').concurrency)
    expect(production.permissions).toEqual({
      contents: 'read',
      actions: 'read',
      'id-token': 'write',
    })
  })

  it("deploys that run's artifact only once it is the assembly the tag names", () => {
    const download = index((step) => step.uses?.startsWith('actions/download-artifact') === true)
    const check = index((step) => step.run?.startsWith('npm run release:digest') === true)
    const credentials = index(
      (step) => step.uses?.startsWith('aws-actions/configure-aws-credentials') === true,
    )
    const deploy = index((step) => step.run === 'npm run release:deploy:production')
    const smoke = index(
      (step) => step.run?.startsWith('npm run smoke -- --stage production') === true,
    )
    expect([download, check, credentials, deploy, smoke].every((i) => i >= 0)).toBe(true)
    expect(download < check && check < credentials && credentials < deploy && deploy < smoke).toBe(
      true,
    )
    expect(production.steps[download]?.with).toEqual({
      name: 'cloud-assembly',
      path: 'released/cdk.out',
      'run-id': expression('inputs.run-id'),
      'github-token': expression('github.token'),
    })
    // The input reaches the shell as a variable, never spliced into the script.
    expect(production.steps[check]).toMatchObject({
      run: 'npm run release:digest -- released/cdk.out --expect-tag "$TAG"',
      env: { TAG: expression('inputs.tag') },
    })
    expect(production.steps[check]?.['working-directory']).toBeUndefined()
    // The released commit's own CDK CLI and smoke test, on the artifact.
    const released = production.steps.find((step) => step.with?.path === 'released')
    expect(released?.with?.ref).toBe(`refs/tags/${expression('inputs.tag')}`)
    for (const step of [deploy, smoke]) {
      expect(production.steps[step]?.['working-directory']).toBe('released')
    }
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
