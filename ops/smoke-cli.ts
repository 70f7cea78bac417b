import { runSmokeCommand } from './smoke-command.ts'

// `npm run smoke -- …` (see smoke-command.ts for the options).
process.exitCode = await runSmokeCommand(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
})
