import { interruptOnSignals } from '#ops/cli-signal-handler.ts'
import { runSmokeCommand } from './smoke-command.ts'

// `npm run smoke -- …` (see smoke-command.ts for the options). The first Ctrl-C or SIGTERM stops
// the checks and revokes the temporary key; a second one ends the process at once, naming the
// key still left and the command that revokes it.
let keyLeft: string | undefined
const signal = interruptOnSignals('smoke', {
  first: 'stopping; the temporary key is revoked first (again to stop at once)',
  again: () => (keyLeft ? `; ${keyLeft}` : ''),
})

process.exitCode = await runSmokeCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  signal,
  onKeyLeft: (line) => {
    keyLeft = line
  },
})
