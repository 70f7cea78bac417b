import { spawnSync } from 'node:child_process'

/**
 * `npm test`: lint, type-check, then vitest (with any arguments given), stopping at the first
 * step that fails, and a last line with each step's time and the whole run's, so a developer
 * sees how long the answer took (README, Tests).
 */
const steps: [name: string, command: string, args: string[]][] = [
  ['lint', 'npm', ['run', '-s', 'lint']],
  ['typecheck', 'npm', ['run', '-s', 'typecheck']],
  ['vitest', 'vitest', ['run', ...process.argv.slice(2)]],
]

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const started = performance.now()
const times: string[] = []
let status = 0
for (const [name, command, args] of steps) {
  const stepStarted = performance.now()
  const result = spawnSync(command, args, { stdio: 'inherit' })
  times.push(`${name} ${seconds(performance.now() - stepStarted)}`)
  status = result.status ?? 1
  if (status !== 0) {
    times[times.length - 1] += ' (failed)'
    break
  }
}
const total = seconds(performance.now() - started)
console.log(`\nnpm test ${status === 0 ? 'passed' : 'FAILED'} in ${total} (${times.join(', ')})`)
process.exitCode = status
