import { runKeysCommand } from './keys-command.ts'

// `npm run keys -- …` (see keys-command.ts for the commands).
process.exitCode = await runKeysCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
})
