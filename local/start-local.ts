import { AssemblyError } from './bundles/cloud-assembly-functions.ts'
import { DataDirInUseError } from './data-dir-lock.ts'
import { SynthesisError } from './deployed-iam/synthesized-stage.ts'
import { type LocalConfig, LocalConfigError, readLocalConfig } from './local-config.ts'
import { type LocalServer, startLocal } from './local-server.ts'
import { startBanner } from './start-banner.ts'

/**
 * `npm start`: reads the local mode contract from the environment, starts the local server,
 * prints the banner and stops cleanly on SIGINT/SIGTERM. Exit codes: 2 for a malformed
 * variable, control-plane file or key file, 1 for a port that cannot be bound or any other start-up failure.
 */

/**
 * `npm start -- --bundles [DIR]`: the functions as `cdk deploy` ships them, from the cloud assembly
 * in DIR (default cdk.out, written by `npm run synth`); the same as PETSTORE_BUNDLES=DIR.
 */
const environmentWithArguments = (args: readonly string[]): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  for (let index = 0; index < args.length; index += 1) {
    if (args[index] !== '--bundles') {
      throw new LocalConfigError(
        `unknown argument "${args[index]}" (npm start takes --bundles [DIR])`,
      )
    }
    const dir = args[index + 1]
    if (dir !== undefined && !dir.startsWith('--')) index += 1
    env.PETSTORE_BUNDLES = dir !== undefined && !dir.startsWith('--') ? dir : 'cdk.out'
  }
  return env
}

const readConfigOrExit = (): LocalConfig => {
  try {
    return readLocalConfig(environmentWithArguments(process.argv.slice(2)))
  } catch (error) {
    if (error instanceof LocalConfigError) {
      process.stderr.write(`petstore: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
}

const startOrExit = async (config: LocalConfig): Promise<LocalServer> => {
  try {
    // One line per request in this terminal (local/gateway/request-log.ts).
    return await startLocal(config, {
      requestLog: (line) => process.stdout.write(`${line}\n`),
      // A request a function's deployed role would refuse: AccessDenied, and the fix, here.
      onIamDenied: (message) => process.stderr.write(`petstore: IAM: ${message}\n`),
    })
  } catch (error) {
    if (error instanceof DataDirInUseError) {
      process.stderr.write(`petstore: ${error.message}\n`)
      process.exit(1)
    }
    // An unusable key file is a malformed setting too, and so is an assembly that cannot run or
    // a CDK app that does not synthesize (the IAM the server enforces comes from its templates).
    if (
      error instanceof LocalConfigError ||
      error instanceof AssemblyError ||
      error instanceof SynthesisError
    ) {
      process.stderr.write(`petstore: ${error.message}\n`)
      process.exit(2)
    }
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      process.stderr.write(
        `petstore: cannot listen on ${config.host}:${config.port} (${code}). Set PORT to a free port, e.g. PORT=3001 npm start\n`,
      )
      process.exit(1)
    }
    throw error
  }
}

const stopOnSignals = (local: LocalServer) => {
  let stopping = false
  const shutdown = (signal: string) => {
    if (stopping) {
      // A second signal: the operator does not want to wait for the graceful stop.
      process.stdout.write(`Received ${signal} again, exiting now\n`)
      process.exit(130)
    }
    stopping = true
    process.stdout.write(`Received ${signal}, shutting down\n`)
    local.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`petstore: shutdown failed: ${(error as Error).message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}

const main = async () => {
  const config = readConfigOrExit()
  const local = await startOrExit(config)
  // One write, so whoever reads the banner (people, scripts, tests) gets it whole.
  process.stdout.write(`${startBanner(config, local).join('\n')}\n`)
  stopOnSignals(local)
}

main().catch((error: unknown) => {
  process.stderr.write(`petstore: failed to start: ${(error as Error).stack ?? String(error)}\n`)
  process.exit(1)
})
