import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { petstoreSettings, settingsReader } from '#infra/config/cdk-json-settings.ts'
import {
  defaultSubjectTemplateCommand,
  RELEASE_SETTINGS,
  readReleaseConfig,
  repositoryIdsCommand,
  SHARED_ACCOUNT_COST,
} from '#infra/config/release-config.ts'
import { readStageConfig } from '#infra/config/stage-config.ts'
import { RELEASE_STACK_OUTPUTS } from '#infra/stacks/petstore-release-stack.ts'
import { digestVersion } from '#ops/release/assembly-digest.ts'
import { applyInstructions } from '#ops/release/release-plan.ts'
import { PRODUCTION_APPROVALS } from '#shared/config/production-approval-config.ts'
import { STAGE_NAMES } from '#shared/config/stages-config.ts'

/**
 * docs/deploying.md is a first-time operator's checklist: each claim it makes about the code, the
 * settings and the workflows is held here to what they are (GitHub's and AWS's own behaviour is
 * cited there, and listed under "What is not verified here").
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const deploying = read('docs/deploying.md')
const DOCS = [
  'README.md',
  ...readdirSync(new URL('../../docs/', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts

interface Job {
  name?: string
  concurrency?: { group: string }
  steps: { with?: Record<string, unknown> }[]
}
const release = parse(read('.github/workflows/release.yml')) as { jobs: Record<string, Job> }
const oneLine = (text: string) => text.replace(/\s+/g, ' ')

/** The text of a section, from its heading to the next heading of its level or above. */
const section = (heading: string): string => {
  const start = deploying.indexOf(`${heading}\n`)
  expect(start, heading).toBeGreaterThan(-1)
  const level = /^#+/.exec(heading)?.[0] ?? '##'
  const next = deploying
    .slice(start + heading.length)
    .search(new RegExp(`\\n#{1,${level.length}} `))
  return deploying.slice(start, next === -1 ? undefined : start + heading.length + next)
}

/** Every ```json block that holds petstore settings, in deploying.md and operations.md. */
const settingsExamples = (): { path: string; settings: Record<string, unknown> }[] =>
  ['docs/deploying.md', 'docs/operations.md', 'README.md'].flatMap((path) =>
    [...read(path).matchAll(/```json\n([\s\S]*?)```/g)]
      .map((match) => JSON.parse(match[1] as string) as { context?: { petstore?: object } })
      .filter((json) => json.context?.petstore)
      .map((json) => ({ path, settings: json.context?.petstore as Record<string, unknown> })),
  )

describe('the settings, as deploying.md shows them', () => {
  it('gives cdk.json examples that synthesize: valid names, stages and a release', () => {
    const examples = settingsExamples()
    expect(examples.length).toBeGreaterThanOrEqual(3)
    for (const { path, settings } of examples) {
      expect(() => petstoreSettings({}, settings), path).not.toThrow()
      const reader = settingsReader(settings)
      for (const stage of STAGE_NAMES)
        expect(() => readStageConfig(reader, stage), path).not.toThrow()
      expect(() => readReleaseConfig(reader), path).not.toThrow()
    }
    const complete = examples.find(({ settings }) => 'release' in settings)
    expect(readReleaseConfig(settingsReader(complete?.settings ?? {}))).toMatchObject({
      subjectForms: ['immutable'],
      accounts: { staging: '111111111111', production: '222222222222' },
    })
  })

  it('lists every release setting in its table', () => {
    const table = section('## The settings, in cdk.json')
    for (const name of RELEASE_SETTINGS.filter((setting) => setting !== 'oidcProviderArn')) {
      expect(table, name).toMatch(new RegExp(`^\\| \`${name}\`|, \`${name}\` \\|`, 'm'))
    }
    expect(table).toContain('`oidcProviderArn`')
  })

  it('never shows a -c setting, other than to say synthesis refuses it', () => {
    const flag = /-c (?:staging|production|release)\.|-c (?:waf|gradualDeployment|petstore)=/
    for (const path of DOCS) {
      for (const paragraph of read(path).split(/\n\s*\n/)) {
        if (flag.test(paragraph)) expect(oneLine(paragraph), path).toMatch(/refuse/)
      }
    }
  })

  it('says what one account for both stages gives up, as synthesis does', () => {
    expect(oneLine(section('## One account per stage'))).toContain(
      "the staging job, which no one approves, assumes the same bootstrap roles as production's job, and those can change production's stacks",
    )
    expect(SHARED_ACCOUNT_COST).toBe(
      "the staging job, which no one approves, assumes the same bootstrap roles as production's job, and those can change production's stacks",
    )
  })
})

describe('the checklist', () => {
  it('reads the ids and restores the default subject template with the commands synthesis names', () => {
    const step = oneLine(section("### 3. The repository's identity, and the subject GitHub sends"))
    expect(step).toContain(repositoryIdsCommand('OWNER/REPO'))
    expect(step).toContain(defaultSubjectTemplateCommand('OWNER/REPO').replace(' -F ', ' -F '))
    expect(step).toContain('repo:OWNER@OWNER_ID/REPO@REPO_ID:environment:NAME')
    expect(step).toContain('repo:OWNER/REPO:environment:NAME')
  })

  it("names the release stack's outputs as the stack prints them", () => {
    const step = section('### 5. The release stacks')
    for (const output of RELEASE_STACK_OUTPUTS) expect(step).toContain(`\`${output}\``)
    expect(section('### 6. The GitHub environments')).toContain("that stage's `RoleArn`")
  })

  it('sets the release stacks up with scripts that exist, and deploys stages with ones that do', () => {
    for (const [, script] of deploying.matchAll(/npm run (?:-s )?([\w:-]+)/g)) {
      expect(scripts, script).toHaveProperty(script as string)
    }
    const step = section('### 5. The release stacks')
    for (const stage of STAGE_NAMES) {
      expect(step).toContain(`npm run release:setup:${stage}       `.trimEnd())
      expect(step).toContain(`# ${scripts[`release:setup:${stage}`]}`)
    }
  })

  it('names the required status check and the jobs as the workflow names them', () => {
    expect(section('### 7. Protect main')).toContain(`**\`${release.jobs.test?.name}\`**`)
    expect(release.jobs.test?.name).toBe('npm test')
    const first = oneLine(section('### 8. The first release'))
    for (const job of ['test', 'assembly', 'staging', 'tag'] as const) {
      expect(first).toContain(`\`${release.jobs[job]?.name}\``)
    }
  })
})

describe('the pipeline, as deploying.md describes it', () => {
  it('lists its jobs, in order', () => {
    const table = section('## The release pipeline')
    const listed = [...table.matchAll(/^\| `([\w-]+)`/gm)].map((match) => match[1])
    expect(listed).toEqual(Object.keys(release.jobs))
  })

  it('names the deploy queues and the artifact days the workflow has', () => {
    const pipeline = oneLine(section('## The release pipeline'))
    for (const stage of STAGE_NAMES) {
      expect(pipeline).toContain(`\`${release.jobs[stage]?.concurrency?.group}\``)
    }
    const upload = release.jobs.assembly?.steps.find((step) => step.with?.['retention-days'])
    expect(upload?.with?.['retention-days']).toBe(90)
    expect(pipeline).toContain('kept 90 days')
    expect(oneLine(section('## Rolling back'))).toContain('keeps its artifacts 90 days')
  })

  it('writes digests in the forms the digest tool reads', () => {
    const pipeline = section('### What is tested is what is deployed')
    expect(pipeline).toContain('`v2:sha256:<hex>`')
    expect(pipeline).toContain('`sha256:<hex>`')
    expect(digestVersion(`v2:sha256:${'0'.repeat(64)}`)).toBe(2)
    expect(digestVersion(`sha256:${'0'.repeat(64)}`)).toBe(1)
  })

  it('never says the smoke test writes nothing to production', () => {
    for (const path of DOCS) {
      // Sentences of paragraphs, list items and table cells.
      const units = read(path).split(/\n\s*\n|\n(?=\s*[-|] )/)
      for (const sentence of units.flatMap((unit) => oneLine(unit).split(/\. |\| /))) {
        if (!/smoke/i.test(sentence)) continue
        expect(sentence, path).not.toMatch(
          /writes nothing|never writes to production|\(never to production\)|it writes no pet\)/,
        )
      }
    }
  })
})

describe('the gate, as deploying.md describes it on every GitHub plan', () => {
  const gate = () => oneLine(section('## The gate, on every GitHub plan'))

  it('documents both modes by the names cdk.json takes, and what GitHub enforces on which plan', () => {
    for (const mode of PRODUCTION_APPROVALS) expect(gate()).toContain(`\`"${mode}"\``)
    expect(gate()).toContain(
      'other deployment protection rules, such as a wait timer or required reviewers, are only available for public repositories',
    )
    expect(gate()).toContain('GitHub Docs, "Reviewing deployments"')
  })

  it('says what prevent self-review does, and what 30 days of waiting do, citing GitHub', () => {
    expect(gate()).toContain('*Prevent self-reviews*')
    expect(gate()).toContain(
      'you will not be able to approve a deployment from a workflow run you initiated',
    )
    expect(gate()).toContain('If a job is not approved within 30 days, it will automatically fail')
    expect(oneLine(section('### 6. The GitHub environments'))).toContain('*Prevent self-reviews*')
  })

  it("gives the operator's apply as every plan's summary prints it", () => {
    const lines = applyInstructions('operator', {
      planRun: '<plan run id>',
      assemblyRun: '<assembly run id>',
      digest: '<digest>',
    })
    const commands = lines.slice(lines.indexOf('```sh') + 1, lines.lastIndexOf('```'))
    expect(commands.length).toBeGreaterThanOrEqual(4)
    const block = section('## The gate, on every GitHub plan')
    for (const command of commands) expect(block).toContain(`\n${command}\n`)
  })
})
