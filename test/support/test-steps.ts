import { spawnSync } from 'node:child_process'

/**
 * `npm test`: lint, type-check, then vitest (with any arguments given). Every step runs even when
 * an earlier one failed: a tsc or knip error often only echoes a mistake whose fix a test names
 * (a stale OpenAPI document: "run npm run openapi"; a client method left out), so stopping at the
 * first failure would hide the message that says what to do. A step stopped by a signal (Ctrl-C)
 * stops the run. The last line says which steps failed, each step's time and the whole run's, so
 * a developer sees how long the answer took (README, Tests); the exit code is the first failed
 * step's.
 */
const steps: [name: string, command: string, args: string[]][] = [
  ['lint', 'npm', ['run', '-s', 'lint']],
  ['typecheck', 'npm', ['run', '-s', 'typecheck']],
  ['vitest', 'vitest', ['run', ...process.argv.slice(2)]],
]

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const started = performance.now()
const times: string[] = []
const failed: string[] = []
let status = 0
for (const [name, command, args] of steps) {
  const stepStarted = performance.now()
  const result = spawnSync(command, args, { stdio: 'inherit' })
  const stepStatus = result.status ?? 1
  times.push(
    `${name} ${seconds(performance.now() - stepStarted)}${stepStatus === 0 ? '' : ' (failed)'}`,
  )
  if (stepStatus !== 0) {
    failed.push(name)
    if (status === 0) status = stepStatus
  }
  if (result.signal === 'SIGINT' || result.signal === 'SIGTERM') {
    times.push(`stopped by ${result.signal}`)
    break
  }
}
const total = seconds(performance.now() - started)
const outcome = failed.length === 0 ? 'passed' : `FAILED (${failed.join(', ')})`
console.log(`\nnpm test ${outcome} in ${total} (${times.join(', ')})`)
if (failed.length > 0) {
  console.log(
    "Every step ran: a test's message often names the fix that a lint or type error above only echoes.",
  )
}
process.exitCode = status
