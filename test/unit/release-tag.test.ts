import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { releaseTag, releaseTagDigest, shellQuote } from '#ops/release/release-tag.ts'

/**
 * `npm run release:tag` (ops/release/release-tag.ts) against a scratch remote: a bare repository
 * in a temp directory, cloned as `actions/checkout` clones (one commit deep, no tags), once per
 * job attempt, so a re-run starts from a runner that has never seen the first run's tag.
 */
const DIGEST = `v2:sha256:${'a'.repeat(64)}`
const REBUILT = `v2:sha256:${'b'.repeat(64)}`
/** A digest of the first version, as releases tagged before version 2 name them. */
const V1_DIGEST = `sha256:${'c'.repeat(64)}`
const DAY = new Date('2026-08-01T23:59:00Z')
const NEXT_DAY = new Date('2026-08-02T00:01:00Z')

let root: string
let remote: string
let clones = 0

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim()

/** A fresh runner's checkout of main: depth 1, no tags. */
const checkout = (): string => {
  clones += 1
  const path = join(root, `runner-${clones}`)
  git(root, 'clone', '--quiet', '--depth', '1', '--no-tags', `file://${remote}`, path)
  return path
}

/** The remote's release tags: name → the commit it names (read in the bare repository itself). */
const remoteTags = (): Record<string, string> => {
  const tags: Record<string, string> = {}
  const format = '%(refname:strip=2) %(*objectname)'
  for (const line of git(remote, 'for-each-ref', `--format=${format}`, 'refs/tags').split('\n')) {
    const [name, commit] = line.split(' ')
    if (name && commit) tags[name] = commit
  }
  return tags
}

const commitToMain = (message: string): string => {
  const work = join(root, 'work')
  writeFileSync(join(work, 'file.txt'), `${message}\n`)
  git(work, 'add', '.')
  git(work, 'commit', '--quiet', '-m', message)
  git(work, 'push', '--quiet', 'origin', 'HEAD:main')
  return git(work, 'rev-parse', 'HEAD')
}

let first: string

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'release-tag-'))
  remote = join(root, 'remote.git')
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote)
  git(root, 'clone', '--quiet', remote, join(root, 'work'))
  first = commitToMain('first release')
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('release:tag, run twice on one commit', () => {
  it('tags the commit once, and adds nothing when the job is re-run the same day', () => {
    const tag = `release-20260801-${first.slice(0, 12)}`
    expect(releaseTag({ digest: DIGEST, cwd: checkout(), now: DAY })).toEqual({
      tag,
      created: true,
    })
    expect(remoteTags()).toEqual({ [tag]: first })
    // The re-run: a new runner, a shallow tagless checkout, the same commit and assembly.
    const rerun = checkout()
    expect(releaseTag({ digest: DIGEST, cwd: rerun, now: DAY })).toEqual({ tag, created: false })
    expect(remoteTags()).toEqual({ [tag]: first })
    expect(releaseTagDigest(tag, { cwd: rerun })).toBe(DIGEST)
  })

  it('adds no second tag when it is re-run on a later day', () => {
    const before = remoteTags()
    expect(releaseTag({ digest: DIGEST, cwd: checkout(), now: NEXT_DAY })).toMatchObject({
      created: false,
      tag: `release-20260801-${first.slice(0, 12)}`,
    })
    expect(remoteTags()).toEqual(before)
  })

  it('gives the same commit released with another assembly a tag of its own', () => {
    const { tag, created } = releaseTag({ digest: REBUILT, cwd: checkout(), now: DAY })
    expect({ tag, created }).toEqual({
      tag: `release-20260801-${first.slice(0, 12)}-2`,
      created: true,
    })
    expect(Object.keys(remoteTags())).toHaveLength(2)
    // And that one, too, is made once.
    const rerun = checkout()
    expect(releaseTag({ digest: REBUILT, cwd: rerun, now: NEXT_DAY }).created).toBe(false)
    expect(Object.keys(remoteTags())).toHaveLength(2)
    expect(releaseTagDigest(tag, { cwd: rerun })).toBe(REBUILT)
  })

  it('pushes a tag an earlier attempt made but could not push, instead of tagging again', () => {
    const commit = commitToMain('push failed')
    const runner = checkout()
    const tag = `release-20260801-${commit.slice(0, 12)}`
    git(
      runner,
      'tag',
      '-a',
      tag,
      '-m',
      `Deployed to staging and production\n\nCloud assembly ${DIGEST}`,
    )
    expect(releaseTag({ digest: DIGEST, cwd: runner, now: NEXT_DAY })).toEqual({
      tag,
      created: false,
    })
    expect(remoteTags()[tag]).toBe(commit)
  })

  it('reads a release tagged with a version 1 digest', () => {
    const commit = commitToMain('a release before digest version 2')
    const { tag } = releaseTag({ digest: V1_DIGEST, cwd: checkout(), now: DAY })
    expect(remoteTags()[tag]).toBe(commit)
    const rerun = checkout()
    expect(releaseTag({ digest: V1_DIGEST, cwd: rerun, now: NEXT_DAY }).created).toBe(false)
    expect(releaseTagDigest(tag, { cwd: rerun })).toBe(V1_DIGEST)
  })

  it('refuses what is not a digest, and a tag that is not a release', () => {
    const runner = join(root, 'work')
    expect(() => releaseTag({ digest: '', cwd: runner })).toThrow('not an assembly digest')
    expect(() => releaseTagDigest('v1.0.0', { cwd: runner })).toThrow('not a release tag')
    expect(() => releaseTagDigest(`release-20260801-${'0'.repeat(12)}`, { cwd: runner })).toThrow(
      /release-20260801-0{12}: /,
    )
  })
})

describe('release:tag --dry-run', () => {
  it('prints commands that, pasted into a shell, make the very tag a real run makes', () => {
    const commit = commitToMain('dry run')
    const runner = checkout()
    const printed: string[] = []
    const result = releaseTag({
      digest: DIGEST,
      cwd: runner,
      now: DAY,
      dryRun: true,
      print: (line) => printed.push(line),
    })
    expect(result).toEqual({ tag: `release-20260801-${commit.slice(0, 12)}`, created: true })
    expect(printed).toHaveLength(2)
    expect(remoteTags()[result.tag]).toBeUndefined()
    // Pasted, as an operator would: one line after the other in bash.
    execFileSync('bash', ['-euc', printed.join('\n')], { cwd: runner, stdio: 'ignore' })
    expect(remoteTags()[result.tag]).toBe(commit)
    expect(git(runner, 'for-each-ref', '--format=%(contents)', `refs/tags/${result.tag}`)).toBe(
      `Deployed to staging and production\n\nCloud assembly ${DIGEST}`,
    )
    expect(releaseTag({ digest: DIGEST, cwd: checkout(), now: DAY }).created).toBe(false)
  })

  it('quotes what a shell would split or expand, and nothing else', () => {
    expect(shellQuote('refs/tags/release-20260801-abc')).toBe('refs/tags/release-20260801-abc')
    expect(shellQuote('user.name=petstore release pipeline')).toBe(
      "'user.name=petstore release pipeline'",
    )
    expect(shellQuote("it's $HOME\n`x`")).toBe(`'it'"'"'s $HOME\n\`x\`'`)
  })
})
