import { spawn } from 'node:child_process'
import { setPriority } from 'node:os'

/**
 * `npm test`: lint, type-check and vitest (with any arguments given) side by side. Every step
 * runs even when another failed: a tsc or knip error often only echoes a mistake whose fix a
 * test names (a stale OpenAPI document: "run npm run openapi"; a client method left out), so
 * stopping at the first failure would hide the message that says what to do. The three share
 * nothing, so they run at once, the checks at a lower priority (they take the CPU the tests leave
 * idle); the checks' output is printed whole after the tests', lint's first. Ctrl-C stops all
 * three. The last line says which steps failed, each step's time and the whole run's, so a
 * developer sees how long the answer took (README, Tests); the exit code is the first failed
 * step's.
 */
interface StepResult {
  name: string
  status: number
  signal: NodeJS.Signals | null
  ms: number
}

const run = (
  name: string,
  command: string,
  args: string[],
  output: 'inherit' | 'buffer',
): Promise<StepResult & { text: string }> =>
  new Promise((resolve) => {
    const started = performance.now()
    const child = spawn(command, args, {
      stdio: output === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    })
    // A buffered check yields the CPU to the tests (its processes inherit the niceness): it
    // takes what the tests leave idle rather than slowing them.
    if (output === 'buffer' && child.pid !== undefined) {
      try {
        setPriority(child.pid, 10)
      } catch {}
    }
    const chunks: Buffer[] = []
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk))
    child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk))
    const done = (status: number, signal: NodeJS.Signals | null) =>
      resolve({
        name,
        status,
        signal,
        ms: performance.now() - started,
        text: Buffer.concat(chunks).toString(),
      })
    child.once('error', (error) => {
      chunks.push(Buffer.from(`${name}: ${error.message}\n`))
      done(1, null)
    })
    child.once('close', (status, signal) => done(status ?? 1, signal))
  })

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const started = performance.now()
const results: StepResult[] = []
const stopped = (result: StepResult) => result.signal === 'SIGINT' || result.signal === 'SIGTERM'

// Vitest's two workers leave part of a core idle (imports, a project's last files), which lint
// and type-check fill: all three start at once, and the checks' output follows the tests'.
const vitest = run('vitest', 'vitest', ['run', ...process.argv.slice(2)], 'inherit')
const checks = await Promise.all([
  run('lint', 'npm', ['run', '-s', 'lint'], 'buffer'),
  run('typecheck', 'npm', ['run', '-s', 'typecheck'], 'buffer'),
])
results.push(await vitest)
for (const check of checks) {
  process.stdout.write(check.text)
  results.push(check)
}

const failed = results.filter((result) => result.status !== 0).map((result) => result.name)
const times = results.map(
  (result) =>
    `${result.name} ${seconds(result.ms)}${result.status === 0 ? '' : ' (failed)'}${stopped(result) ? ` (stopped by ${result.signal})` : ''}`,
)
const total = seconds(performance.now() - started)
const outcome = failed.length === 0 ? 'passed' : `FAILED (${failed.join(', ')})`
console.log(`\nnpm test ${outcome} in ${total} (${times.join(', ')})`)
if (failed.length > 0) {
  console.log(
    "Every step ran: a test's message often names the fix that a lint or type error above only echoes.",
  )
}
process.exitCode = results.find((result) => result.status !== 0)?.status ?? 0
