import { writeFileSync } from 'node:fs'
import fc from 'fast-check'
import { BEARER_TOKEN_VALIDATION_PATTERN } from '#shared/auth/bearer-token.ts'
import {
  authorizerAccepts,
  BEARER_TOKEN_CASES,
  trickyHeader,
} from '#test/fixtures/bearer-token-cases.ts'

/**
 * Writes the validation pattern and the bearer token cases for TokenPatternCheck.java, which runs
 * them through java.util.regex (API Gateway's engine): the fixed cases, then generated headers
 * (fixed seed) whose expected verdict is the JavaScript authorizer's.
 *
 * Format, one item a line: the pattern, then `<header> <true|false>`. Pattern and headers are
 * base64 of their UTF-16BE code units, so any character (line terminators, NUL, lone surrogates)
 * arrives intact. Usage: node --import tsx test/java/token-cases-writer.ts <output file>
 */
const GENERATED = 3_000
const SEED = 2028

const encode = (text: string): string => {
  const bytes = Buffer.alloc(text.length * 2)
  for (let i = 0; i < text.length; i += 1) bytes.writeUInt16BE(text.charCodeAt(i), i * 2)
  return bytes.toString('base64')
}

const output = process.argv[2]
if (!output) {
  process.stderr.write('usage: token-cases-writer.ts <output file>\n')
  process.exit(2)
}

const generated = fc
  .sample(trickyHeader, { seed: SEED, numRuns: GENERATED })
  .map((header) => ({ header, expected: authorizerAccepts(header) }))
const cases = [...BEARER_TOKEN_CASES, ...generated]
const lines = [
  encode(BEARER_TOKEN_VALIDATION_PATTERN),
  ...cases.map(({ header, expected }) => `${encode(header)} ${expected}`),
]
writeFileSync(output, `${lines.join('\n')}\n`)
process.stdout.write(
  `wrote ${cases.length} token cases (${BEARER_TOKEN_CASES.length} fixed, ${generated.length} generated, ${cases.filter((c) => c.expected).length} accepted)\n`,
)
