/**
 * How much generated and load work the fuzz and load suites do. `npm test` runs them at scale 1,
 * enough to take every path in seconds; CI's DynamoDB Local pass sets PETSTORE_TEST_SCALE=10
 * (`.ci/dynamodb-local.sh`): the counts docs/reliability.md gives for CI. A suite's own variable
 * (PETSTORE_FUZZ_RUNS, PETSTORE_LOAD_CREATES, PETSTORE_AUTHORIZER_REQUESTS) sets its count outright.
 */
const TEST_SCALE = Number(process.env.PETSTORE_TEST_SCALE ?? 1)
if (!(Number.isInteger(TEST_SCALE) && TEST_SCALE >= 1)) {
  throw new Error(
    `PETSTORE_TEST_SCALE must be a whole number from 1, got "${process.env.PETSTORE_TEST_SCALE}"`,
  )
}

/** `base` times the scale, unless `variable` is set in the environment. */
export const scaled = (base: number, variable: string): number => {
  const value = process.env[variable]
  if (value === undefined || value === '') return base * TEST_SCALE
  const count = Number(value)
  if (!(Number.isInteger(count) && count >= 1)) {
    throw new Error(`${variable} must be a whole number from 1, got "${value}"`)
  }
  return count
}
