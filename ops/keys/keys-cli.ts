import { interruptOnSignals } from '#ops/cli-signal-handler.ts'
import { runKeysCommand } from './keys-command.ts'

// `npm run keys -- …` (keys-command-table.ts lists the commands). The first Ctrl-C or SIGTERM lets
// the command stop at its next step and undo a change left halfway (it says what it left); a
// second one ends the process at once.
const signal = interruptOnSignals('keys', {
  first: 'stopping at the next step (again to stop at once)',
  again: () => '; npm run keys -- list shows the keys as they are',
})

process.exitCode = await runKeysCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  signal,
})
