// `npm run release:digest -- [DIR] [--expect DIGEST | --save FILE | --check FILE] [--github-output]`
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { type AssemblyDigest, assemblyDigest, digestDifferences } from './assembly-digest.ts'

/**
 * Prints a cloud assembly's digest (assembly-digest.ts). `--save FILE` keeps its parts, `--check
 * FILE` compares the assembly with saved parts, naming what differs; `--expect DIGEST` compares
 * with a digest alone (the pipeline passes it from job to job); `--github-output` also writes
 * `digest=...` for the next jobs. Exit codes: 0 the same (or printed), 1 a different assembly, 2 a
 * usage error.
 */
const USAGE =
  'usage: npm run release:digest -- [DIR (default cdk.out)] [--expect sha256:... | --save FILE | --check FILE] [--github-output]'

const fail = (message: string, code: number): never => {
  process.stderr.write(`release:digest: ${message}\n`)
  process.exit(code)
}

const main = () => {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`, 2)
  }
  const { values, positionals } = parsed
  if (positionals.length > 1) return fail(USAGE, 2)
  const dir = positionals[0] ?? 'cdk.out'
  let actual: AssemblyDigest
  try {
    actual = assemblyDigest(dir)
  } catch (error) {
    return fail(`${dir}: ${(error as Error).message}`, 2)
  }
  if (values.save) writeFileSync(values.save, `${JSON.stringify(actual, null, 2)}\n`)
  if (values['github-output']) {
    const output = process.env.GITHUB_OUTPUT
    if (!output) return fail('--github-output needs GITHUB_OUTPUT (set by GitHub Actions)', 2)
    appendFileSync(output, `digest=${actual.digest}\n`)
  }
  if (values.check) {
    const expected = JSON.parse(readFileSync(values.check, 'utf8')) as AssemblyDigest
    const differences = digestDifferences(expected, actual)
    if (differences.length > 0) {
      return fail(`${dir} is not the assembly that was tested:\n  ${differences.join('\n  ')}`, 1)
    }
  }
  if (values.expect && values.expect !== actual.digest) {
    return fail(`${dir} is ${actual.digest}, not the tested assembly ${values.expect}`, 1)
  }
  process.stdout.write(`${actual.digest}\n`)
}

const parse = () =>
  parseArgs({
    allowPositionals: true,
    options: {
      expect: { type: 'string' },
      save: { type: 'string' },
      check: { type: 'string' },
      'github-output': { type: 'boolean' },
    },
  })

main()
