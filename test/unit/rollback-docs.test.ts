import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * docs/deploying.md, "Rolling back": a release older than its artifacts is released again through
 * the pipeline from a pull request whose tree is the tag's. The doc's lines, run as they are
 * against a scratch remote, must make that branch: the tag's files exactly (files added since
 * gone, files removed since back), on top of main.
 */
const deploying = readFileSync(new URL('../../docs/deploying.md', import.meta.url), 'utf8')
const rollingBack = deploying.slice(deploying.indexOf('## Rolling back'))
const block = /```sh\n(TAG=[\s\S]*?)```/.exec(rollingBack)?.[1] ?? ''

const root = mkdtempSync(join(tmpdir(), 'rollback-docs-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const IDENTITY = ['-c', 'user.name=test', '-c', 'user.email=test@example.com']
const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', [...IDENTITY, ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim()

describe('rolling back a release older than its artifacts', () => {
  it("makes, with the doc's own lines, a branch on main whose tree is the release's", () => {
    expect(block).toContain('git checkout "$TAG" -- .')
    const remote = join(root, 'remote.git')
    const work = join(root, 'work')
    git(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote)
    git(root, 'clone', '--quiet', remote, work)
    writeFileSync(join(work, 'kept.txt'), 'released\n')
    writeFileSync(join(work, 'removed-since.txt'), 'released\n')
    git(work, 'add', '.')
    git(work, 'commit', '--quiet', '-m', 'the release')
    const tag = `release-20260801-${git(work, 'rev-parse', 'HEAD').slice(0, 12)}`
    git(work, 'tag', '-a', tag, '-m', 'Deployed to staging and production')
    git(work, 'push', '--quiet', 'origin', 'main', `refs/tags/${tag}`)
    writeFileSync(join(work, 'kept.txt'), 'changed since\n')
    unlinkSync(join(work, 'removed-since.txt'))
    writeFileSync(join(work, 'added-since.txt'), 'new\n')
    git(work, 'add', '-A')
    git(work, 'commit', '--quiet', '-m', 'later work')
    git(work, 'push', '--quiet', 'origin', 'main')
    const main = git(work, 'rev-parse', 'HEAD')

    // An operator's clone, without the tag, runs the doc's lines with the release's tag.
    const operator = join(root, 'operator')
    git(root, 'clone', '--quiet', '--no-tags', remote, operator)
    const script = block.replace(/^TAG=.*$/m, `TAG=${tag}`)
    execFileSync('bash', ['-euc', script], {
      cwd: operator,
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'operator',
        GIT_AUTHOR_EMAIL: 'operator@example.com',
        GIT_COMMITTER_NAME: 'operator',
        GIT_COMMITTER_EMAIL: 'operator@example.com',
      },
    })

    const branch = `refs/heads/rollback-${tag}`
    expect(git(remote, 'rev-parse', `${branch}^{tree}`)).toBe(
      git(remote, 'rev-parse', `${tag}^{tree}`),
    )
    expect(git(remote, 'rev-parse', `${branch}^`)).toBe(main)
  })
})
