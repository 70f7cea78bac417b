import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { ROOT } from '#test/support/local-server.ts'

/**
 * The workflows' supply chain (docs/deploying.md, "Supply chain"): every action pinned by a full
 * commit SHA with its tag beside it, Dependabot to move both; no checkout keeps its credentials;
 * and in a job that can mint an OIDC token or holds a write token, no install script runs but those
 * package.json's allowScripts allows (npm ci --ignore-scripts, then npm rebuild of exactly those).
 */
interface Step {
  uses?: string
  run?: string
  with?: Record<string, unknown>
  env?: Record<string, unknown>
  'working-directory'?: string
}
interface Job {
  permissions?: Record<string, string>
  steps: Step[]
}
interface Workflow {
  permissions?: Record<string, string>
  jobs: Record<string, Job>
}

const DIR = join(ROOT, '.github/workflows')
const FILES = readdirSync(DIR).filter((name) => name.endsWith('.yml'))
const text = (name: string) => readFileSync(join(DIR, name), 'utf8')
const workflows = FILES.map((name) => ({ name, workflow: parse(text(name)) as Workflow }))
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  allowScripts: Record<string, boolean>
}
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { hasInstallScript?: boolean }>
}
/** The packages whose install scripts may run where a token could be taken (each reason: docs). */
const ALLOWED = Object.entries(packageJson.allowScripts)
  .filter(([, allowed]) => allowed)
  .map(([name]) => name)

/** A job's effective permissions: its own, or the workflow's. */
const permissionsOf = (workflow: Workflow, job: Job) =>
  job.permissions ?? workflow.permissions ?? {}
const privileged = (workflow: Workflow, job: Job) =>
  Object.entries(permissionsOf(workflow, job)).some(
    ([scope, level]) => level === 'write' && scope !== 'pull-requests',
  )

const allJobs = workflows.flatMap(({ name, workflow }) =>
  Object.entries(workflow.jobs).map(([id, job]) => ({
    where: `${name}: ${id}`,
    job,
    privileged: privileged(workflow, job),
  })),
)

describe('every action', () => {
  it('is pinned by a full commit SHA, its tag in a comment', () => {
    const lines = FILES.flatMap((name) =>
      text(name)
        .split('\n')
        .filter((line) => /^\s*(?:-\s+)?uses:/.test(line))
        .map((line) => ({ name, line: line.trim() })),
    )
    expect(lines.length).toBeGreaterThanOrEqual(20)
    const unpinned = lines.filter(
      ({ line }) => !/^(?:-\s+)?uses: [\w.-]+\/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/.test(line),
    )
    expect(unpinned.map(({ name, line }) => `${name}: ${line}`)).toEqual([])
  })

  it('is pinned alike wherever it is used: one SHA per action and tag', () => {
    const pins = new Map<string, Set<string>>()
    for (const name of FILES) {
      for (const [, action, sha, tag] of text(name).matchAll(
        /uses: ([\w.-]+\/[\w.-]+)@(\w+) # (\S+)/g,
      )) {
        pins.set(action as string, (pins.get(action as string) ?? new Set()).add(`${sha} ${tag}`))
      }
    }
    const mixed = [...pins].filter(([, versions]) => versions.size > 1)
    expect(mixed).toEqual([])
    expect([...pins.keys()].sort()).toEqual([
      'actions/checkout',
      'actions/download-artifact',
      'actions/setup-node',
      'actions/upload-artifact',
      'aws-actions/configure-aws-credentials',
    ])
  })

  it('has an update path: Dependabot for GitHub Actions, which moves the SHA and its tag comment', () => {
    const dependabot = parse(readFileSync(join(ROOT, '.github/dependabot.yml'), 'utf8')) as {
      version: number
      updates: { 'package-ecosystem': string; directory: string; schedule: { interval: string } }[]
    }
    expect(dependabot.version).toBe(2)
    expect(dependabot.updates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          'package-ecosystem': 'github-actions',
          directory: '/',
          schedule: expect.objectContaining({ interval: expect.any(String) }),
        }),
      ]),
    )
  })
})

describe('checkouts', () => {
  it('keep no credentials on disk', () => {
    const keeping = allJobs.flatMap(({ where, job }) =>
      job.steps
        .filter((step) => step.uses?.startsWith('actions/checkout@'))
        .filter((step) => step.with?.['persist-credentials'] !== false)
        .map(() => where),
    )
    expect(keeping).toEqual([])
  })

  it("hand the tag job's write token to the pushing step alone, in its environment", () => {
    const tag = allJobs.find(({ where }) => where === 'release.yml: tag')?.job as Job
    const holding = tag.steps.filter((step) => JSON.stringify(step).includes('github.token'))
    expect(holding).toHaveLength(1)
    expect(holding[0]?.run).toMatch(/^npm run release:tag /)
    expect(holding[0]?.env?.GIT_CONFIG_KEY_0).toMatch(
      /^url\.https:\/\/x-access-token:\$\{\{ github\.token \}\}@github\.com\/\.insteadOf$/,
    )
    // The last step: every install is done before the token is anywhere.
    expect(tag.steps.at(-1)).toBe(holding[0])
  })
})

describe('install scripts', () => {
  it('are an explicit decision for every package that has one, allowed or denied', () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
      .map(([path]) => path.replace(/^.*node_modules\//, ''))
    expect([...new Set(withScripts)].sort()).toEqual(Object.keys(packageJson.allowScripts).sort())
    expect([...ALLOWED].sort()).toEqual(['esbuild', 'node'])
  })

  it('are the jobs that can mint a token or write: the deploys, the plans, the tag', () => {
    expect(allJobs.filter((j) => j.privileged).map((j) => j.where)).toEqual([
      'release.yml: staging',
      'release.yml: production-plan',
      'release.yml: production',
      'release.yml: tag',
      'rollback.yml: plan',
      'rollback.yml: production',
    ])
  })

  it('never run in those jobs but for the allow-list: npm ci --ignore-scripts, then npm rebuild of the allowed packages', () => {
    const problems: string[] = []
    for (const { where, job, privileged: mayMint } of allJobs) {
      const runs = job.steps.filter((step) => step.run)
      for (const [i, step] of runs.entries()) {
        const line = step.run as string
        if (/\bnpm (install|i|add|exec)\b|\bnpx\b|\byarn\b|\bpnpm\b/.test(line)) {
          problems.push(`${where}: ${line}: installs outside npm ci`)
        }
        if (!mayMint || !/^npm ci\b/.test(line)) continue
        if (line !== 'npm ci --ignore-scripts')
          problems.push(`${where}: ${line}: scripts not ignored`)
        const next = runs[i + 1]
        const rebuilt = /^npm rebuild (.+)$/
          .exec(next?.run ?? '')?.[1]
          ?.split(' ')
          .sort()
        if (
          JSON.stringify(rebuilt) !== JSON.stringify([...ALLOWED].sort()) ||
          next?.['working-directory'] !== step['working-directory']
        ) {
          problems.push(`${where}: ${line}: not followed by npm rebuild ${ALLOWED.join(' ')}`)
        }
      }
      if (mayMint && !runs.some((step) => step.run === 'npm ci --ignore-scripts')) {
        problems.push(`${where}: no npm ci --ignore-scripts`)
      }
    }
    expect(problems).toEqual([])
  })
})
