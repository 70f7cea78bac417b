import { runSmokeCommand } from './smoke-command.ts'

// `npm run smoke -- …` (see smoke-command.ts for the options). The first Ctrl-C or SIGTERM stops
// the checks and revokes the temporary key; a second one ends the process at once, naming the
// key still left and the command that revokes it.
const interrupt = new AbortController()
let keyLeft: string | undefined
const onSignal = (signal: NodeJS.Signals) => {
  if (interrupt.signal.aborted) {
    process.stderr.write(
      `smoke: ${signal} again: stopped at once${keyLeft ? `; ${keyLeft}` : ''}\n`,
    )
    process.exit(130)
  }
  process.stderr.write(
    `smoke: ${signal}: stopping; the temporary key is revoked first (again to stop at once)\n`,
  )
  interrupt.abort()
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

process.exitCode = await runSmokeCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  signal: interrupt.signal,
  onKeyLeft: (line) => {
    keyLeft = line
  },
})
