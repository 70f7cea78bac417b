// `npm run release:tag -- --digest <digest> [--dry-run]`: names the deployed commit and assembly.
import { parseArgs } from 'node:util'
import { releaseTag } from './release-tag.ts'

/**
 * Tags the checked-out commit as released with that assembly and pushes the tag to origin
 * (release-tag.ts), or says which tag already does. `--dry-run` prints the commands that would
 * write, quoted so they can be pasted into a shell, and runs none of them. Exit codes: 0 tagged
 * (or already tagged), 1 git failed, 2 a usage error.
 */
const USAGE = 'usage: npm run release:tag -- --digest <assembly digest> [--dry-run]'

const main = () => {
  let values: { digest?: string; 'dry-run'?: boolean }
  try {
    ;({ values } = parseArgs({
      options: { digest: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    }))
  } catch (error) {
    process.stderr.write(`release:tag: ${(error as Error).message}\n${USAGE}\n`)
    return process.exit(2)
  }
  if (!values.digest?.trim()) {
    process.stderr.write(`release:tag: --digest is required\n${USAGE}\n`)
    return process.exit(2)
  }
  try {
    const dryRun = values['dry-run'] === true
    const { tag, created } = releaseTag({ digest: values.digest.trim(), dryRun })
    if (!created) {
      process.stderr.write(
        `release:tag: ${tag} already names this commit and assembly: nothing added\n`,
      )
    }
    process.stdout.write(`${dryRun && created ? `${tag} (dry run: not made)` : tag}\n`)
  } catch (error) {
    const message = (error as Error).message
    process.stderr.write(`release:tag: ${message}\n`)
    process.exit(/not an assembly digest|knows versions/.test(message) ? 2 : 1)
  }
}

main()
