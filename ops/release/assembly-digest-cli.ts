// `npm run release:digest -- [DIR] [--expect DIGEST | --expect-tag TAG] [--save FILE | --check FILE] [--github-output]`
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import {
  type AssemblyDigest,
  assemblyDigest,
  digestDifferences,
  digestVersion,
  verifyAssembly,
} from './assembly-digest.ts'
import { releaseTagDigest } from './release-tag.ts'

/**
 * Prints a cloud assembly's digest (assembly-digest.ts). `--expect DIGEST` compares with a digest
 * alone (the pipeline passes it from job to job), by the version that made that digest;
 * `--expect-tag TAG` with the digest a release tag names (read from origin when the tag is not
 * here); `--save FILE` keeps the parts, `--check FILE` compares the assembly with saved parts,
 * naming what differs; `--github-output` also writes `digest=...` for the next jobs. Exit codes:
 * 0 the same (or printed), 1 a different assembly, 2 a usage error (an empty or malformed
 * expectation is one: it would accept any assembly).
 */
const USAGE =
  'usage: npm run release:digest -- [DIR (default cdk.out)] [--expect <digest> | --expect-tag release-...] [--save FILE | --check FILE] [--github-output]'

const fail = (message: string, code: number): never => {
  process.stderr.write(`release:digest: ${message}\n`)
  process.exit(code)
}

const parse = () =>
  parseArgs({
    allowPositionals: true,
    options: {
      expect: { type: 'string' },
      'expect-tag': { type: 'string' },
      save: { type: 'string' },
      check: { type: 'string' },
      'github-output': { type: 'boolean' },
    },
  })

/** What the assembly must be: the digest given or the one the tag names; undefined for neither. */
const expectation = ({ values }: ReturnType<typeof parse>): string | undefined => {
  if (values.expect !== undefined && values['expect-tag'] !== undefined) {
    return fail(`--expect or --expect-tag, not both\n${USAGE}`, 2)
  }
  if (values['expect-tag'] === undefined) return values.expect
  try {
    return releaseTagDigest(values['expect-tag'])
  } catch (error) {
    return fail((error as Error).message, 2)
  }
}

/** The assembly's digest (by the expected digest's version) and whether it is the expected one. */
const digestOf = (
  dir: string,
  expected: string | undefined,
): { actual: AssemblyDigest; matches: boolean } => {
  try {
    if (expected === undefined) return { actual: assemblyDigest(dir), matches: true }
    digestVersion(expected.trim())
  } catch (error) {
    return fail(`${dir}: ${(error as Error).message}\n${USAGE}`, 2)
  }
  try {
    return verifyAssembly(dir, expected)
  } catch (error) {
    return fail(`${dir}: ${(error as Error).message}`, 1)
  }
}

const main = () => {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse()
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`, 2)
  }
  if (parsed.positionals.length > 1) return fail(USAGE, 2)
  const { values } = parsed
  const dir = parsed.positionals[0] ?? 'cdk.out'
  const expected = expectation(parsed)
  if (expected !== undefined && expected.trim() === '') {
    return fail(
      `--expect is empty, which would accept any assembly: pass the tested assembly's digest (the assembly job's output)\n${USAGE}`,
      2,
    )
  }
  const { actual, matches } = digestOf(dir, expected)
  if (values.save) writeFileSync(values.save, `${JSON.stringify(actual, null, 2)}\n`)
  if (values['github-output']) {
    const output = process.env.GITHUB_OUTPUT
    if (!output) return fail('--github-output needs GITHUB_OUTPUT (set by GitHub Actions)', 2)
    appendFileSync(output, `digest=${actual.digest}\n`)
  }
  if (values.check) {
    const saved = JSON.parse(readFileSync(values.check, 'utf8')) as AssemblyDigest
    const compared = saved.version === actual.version ? actual : assemblyDigest(dir, saved.version)
    const differences = digestDifferences(saved, compared)
    if (differences.length > 0) {
      return fail(`${dir} is not the assembly that was tested:\n  ${differences.join('\n  ')}`, 1)
    }
  }
  if (!matches) return fail(`${dir} is ${actual.digest}, not the tested assembly ${expected}`, 1)
  process.stdout.write(`${actual.digest}\n`)
}

main()
