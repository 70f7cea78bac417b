// `npm run release:tag -- --digest sha256:... [--dry-run]`: names the deployed commit and assembly.
import { execFileSync } from 'node:child_process'
import { parseArgs } from 'node:util'

/**
 * The release pipeline's last step, once production is deployed and smoked: an annotated tag
 * `release-<UTC date>-<commit>` on the commit the assembly was built from, its message naming the
 * assembly's digest, pushed to origin. Rollback is then `git checkout <tag>` (docs/deploying.md).
 * Exit codes: 0 tagged, 1 git failed, 2 a usage error.
 */
const USAGE = 'usage: npm run release:tag -- --digest sha256:<hex> [--dry-run]'
const DIGEST = /^sha256:[0-9a-f]{64}$/

const releaseTagName = (commit: string, now: Date): string =>
  `release-${now.toISOString().slice(0, 10).replaceAll('-', '')}-${commit.slice(0, 12)}`

const git = (args: string[], dryRun: boolean): string => {
  if (dryRun) {
    process.stdout.write(`git ${args.join(' ')}\n`)
    return ''
  }
  return execFileSync('git', args, { encoding: 'utf8' }).trim()
}

const main = () => {
  let values: { digest?: string; 'dry-run'?: boolean }
  try {
    ;({ values } = parseArgs({
      options: { digest: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    }))
  } catch (error) {
    process.stderr.write(`release:tag: ${(error as Error).message}\n${USAGE}\n`)
    process.exit(2)
  }
  if (!values.digest || !DIGEST.test(values.digest)) {
    process.stderr.write(`release:tag: --digest must be sha256:<64 hex digits>\n${USAGE}\n`)
    process.exit(2)
  }
  const dryRun = values['dry-run'] === true
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()
    const tag = releaseTagName(commit, new Date())
    // The pipeline's own identity: a tag says which run made it, not a person.
    git(
      [
        '-c',
        'user.name=petstore release pipeline',
        '-c',
        'user.email=release-pipeline@users.noreply.github.com',
        'tag',
        '-a',
        tag,
        commit,
        '-m',
        `Deployed to staging and production\n\nCloud assembly ${values.digest}`,
      ],
      dryRun,
    )
    git(['push', 'origin', `refs/tags/${tag}`], dryRun)
    process.stdout.write(`${tag}\n`)
  } catch (error) {
    process.stderr.write(`release:tag: ${(error as Error).message}\n`)
    process.exit(1)
  }
}

main()
