import { runKeysCommand } from './keys-command.ts'

// `npm run keys -- …` (see keys-command.ts for the commands). The first Ctrl-C or SIGTERM lets
// the command stop at its next step and undo a change left halfway (it says what it left); a
// second one ends the process at once.
const interrupt = new AbortController()
const onSignal = (signal: NodeJS.Signals) => {
  if (interrupt.signal.aborted) {
    process.stderr.write(
      `keys: ${signal} again: stopped at once; npm run keys -- list shows the keys as they are\n`,
    )
    process.exit(130)
  }
  process.stderr.write(`keys: ${signal}: stopping at the next step (again to stop at once)\n`)
  interrupt.abort()
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

process.exitCode = await runKeysCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  signal: interrupt.signal,
})
