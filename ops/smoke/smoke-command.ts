import { parseArgs } from 'node:util'
import { maskingArguments } from '#keys/key-value-mask.ts'
import { KeyAdminError } from '#ops/keys/key-admin-error.ts'
import type { KeyAdmin } from '#ops/keys/key-admin-service.ts'
import type { CommandIo } from '#ops/keys/keys-command.ts'
import { didYouMean } from '#ops/keys/keys-command-call.ts'
import {
  localServerOrigin,
  openStageTarget,
  type StageTarget,
} from '#ops/keys/stage-target-resolver.ts'
import { STAGE_NAMES, type StageName } from '#shared/config/stages-config.ts'
import { runSmoke, type SmokeKeys, type SmokeOptions, TemporaryKeyError } from './smoke-runner.ts'

/**
 * `npm run smoke -- …`: the smoke test of a running stage (smoke-runner.ts). Exit codes: 0 every
 * check passed, 1 a check failed, the run was interrupted (or the stage could not be reached),
 * 2 a usage error.
 */

const USAGE = `usage: npm run smoke -- [--stage ${STAGE_NAMES.join('|')} [--region R]] [--base-url <url>] [--key <key>] [--allow-writes] [--json]
  --stage S        a deployed stage: its BaseUrl (or --base-url, e.g. a custom domain) and a temporary
                   key made and revoked with the keys CLI (needs the operator's AWS credentials), or
                   the stage's dedicated smoke key from PETSTORE_SMOKE_KEY (the release pipeline's)
  --base-url URL   another server; with --key, that key is used as it is; without, the URL must be
                   a local server (npm start), whose control plane makes the temporary key
  (neither)        the local server where npm start listens (HOST, PORT)
  PETSTORE_SMOKE_KEY  (environment) a key used as --key is: a CI secret stays off the command line,
                   which npm echoes
  --allow-writes   create a pet on a server given with --base-url and --key (the local server and
                   staging are written to anyway; production never is: its checks are read-only)
  --json           the result as one JSON document on stdout (the report's lines go to stderr)`

/** A usage error: what is wrong, and where the options are listed (exit 2). */
const usageError = (io: SmokeIo, message: string) => {
  io.stderr(`smoke: ${message}\nsmoke: npm run smoke -- --help lists the options\n`)
  return 2
}

/** The stage whose pet catalogue the smoke test never writes to. */
const READ_ONLY_STAGE: StageName = 'production'

/** The keys CLI for a server given by URL alone: the local server's, or a deployed stage's. */
const keysCommandFor = (baseUrl: string | undefined): string => {
  try {
    return `npm run keys -- --url ${localServerOrigin(baseUrl ?? '')}`
  } catch {
    return 'npm run keys -- --stage <stage>'
  }
}

/** The smoke test's management-API part: a temporary Free key, made and revoked with the keys CLI's service. */
export const smokeKeys = (admin: KeyAdmin): SmokeKeys => {
  // Revoking must work after an interruption, which stops the admin's own changes.
  const cleanup = admin.uninterrupted()
  return {
    create: async (onCreated) => {
      let madeId: string | undefined
      try {
        const key = await admin.createKey({
          selector: { plan: 'free' },
          name: `smoke-${new Date().toISOString()}`,
          onCreated: ({ id }) => {
            madeId = id
            onCreated(id)
          },
        })
        return { id: key.id, value: key.value, limits: key.limits }
      } catch (error) {
        // The service says whether a key it made is left; anything else may have left one.
        const kept = error instanceof KeyAdminError ? error.keptKeyId : madeId
        throw new TemporaryKeyError((error as Error).message, kept)
      }
    },
    revoke: async (id) => {
      try {
        await cleanup.revoke(id)
      } catch (error) {
        throw new TemporaryKeyError(
          (error as Error).message,
          id,
          error instanceof KeyAdminError && error.made,
        )
      }
    },
    revokeCommand: (id) => admin.revokeCommand(id),
  }
}

export interface SmokeIo extends CommandIo {
  /** Hears, while a temporary key exists, the line that names it and the command revoking it. */
  onKeyLeft?: (line: string | undefined) => void
}

/** The CLI's whole run: `io` takes the process's streams and environment (tests pass their own). */
/**
 * The environment variable of the stage's dedicated smoke key: the release workflow sets it from
 * the GitHub environment secret SMOKE_API_KEY, so the release role needs no key management.
 */
export const SMOKE_KEY_VARIABLE = 'PETSTORE_SMOKE_KEY'

/**
 * The key to call with: `--key`, or the stage's smoke key from PETSTORE_SMOKE_KEY. Set but empty
 * means the workflow's secret is missing: an error, as is a key given both ways.
 */
const keyFromEnvironment = (
  fromEnv: string | undefined,
  fromArgs: string | undefined,
): { key?: string | undefined; error?: string } => {
  if (fromEnv === undefined) return { key: fromArgs }
  if (!fromEnv.trim()) {
    return {
      error: `${SMOKE_KEY_VARIABLE} is set but empty: it holds the stage's smoke key (in the release workflow, the GitHub environment secret SMOKE_API_KEY)`,
    }
  }
  if (fromArgs !== undefined) {
    return { error: `--key and ${SMOKE_KEY_VARIABLE} both give a key: give one` }
  }
  return { key: fromEnv.trim() }
}

/**
 * The io with every key of `secrets` masked: a key given with --key or PETSTORE_SMOKE_KEY (or
 * typed where it does not belong) is repeated by no message.
 */
const maskedIo = (smokeIo: SmokeIo, secrets: string[]): SmokeIo => ({
  ...smokeIo,
  stdout: maskingArguments(secrets, smokeIo.stdout),
  stderr: maskingArguments(secrets, smokeIo.stderr),
})

const NEEDS_TARGET = 'needs --base-url or --stage'

export const runSmokeCommand = async (argv: string[], smokeIo: SmokeIo): Promise<number> => {
  const fromEnv = smokeIo.env[SMOKE_KEY_VARIABLE]
  const io = maskedIo(smokeIo, fromEnv?.trim() ? [...argv, fromEnv.trim()] : argv)
  let values: {
    stage?: string
    region?: string
    'base-url'?: string
    key?: string
    'allow-writes'?: boolean
    json?: boolean
    help?: boolean
  }
  try {
    values = parseArgs({
      args: argv,
      options: {
        stage: { type: 'string' },
        region: { type: 'string' },
        'base-url': { type: 'string' },
        key: { type: 'string' },
        'allow-writes': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values
  } catch (error) {
    return usageError(io, (error as Error).message)
  }
  if (values.help) {
    io.stdout(`${USAGE}\n`)
    return 0
  }
  // With --json, stdout carries the one document; the report's lines go to stderr.
  const say = (line: string) => (values.json ? io.stderr : io.stdout)(`${line}\n`)
  const givenKey = keyFromEnvironment(fromEnv, values.key)
  if (givenKey.error) return usageError(io, givenKey.error)
  values.key = givenKey.key
  const baseUrl = values['base-url']?.replace(/\/+$/, '')
  if (values.key !== undefined && baseUrl === undefined && values.stage === undefined) {
    return usageError(io, `${fromEnv === undefined ? '--key' : SMOKE_KEY_VARIABLE} ${NEEDS_TARGET}`)
  }
  const { stage } = values
  if (stage !== undefined && !(STAGE_NAMES as readonly string[]).includes(stage)) {
    return usageError(
      io,
      `--stage ${stage} is no deployed stage (${STAGE_NAMES.join(', ')}; without --stage, the local server)${didYouMean(stage, STAGE_NAMES)}`,
    )
  }
  if (stage === READ_ONLY_STAGE && values['allow-writes']) {
    return usageError(
      io,
      `--allow-writes: the smoke test never writes to ${READ_ONLY_STAGE}'s pet catalogue (its checks there are read-only)`,
    )
  }
  // Writes go where no customer sees them: the local server and staging, or where the operator
  // says so. A URL and a key alone may be production behind a custom domain.
  const writes =
    values.stage === undefined
      ? values.key === undefined || values['allow-writes'] === true
      : values.stage !== READ_ONLY_STAGE

  let target: StageTarget | undefined
  try {
    if (values.stage !== undefined || values.key === undefined) {
      target = await openStageTarget({
        stage: values.stage,
        url: values.stage === undefined && baseUrl ? new URL(baseUrl).origin : undefined,
        region: values.region,
        env: io.env,
        warn: (message) => io.stderr(`warning: ${message}\n`),
        signal: io.signal,
      })
    }
    const admin = target?.admin
    const keys: SmokeKeys | undefined =
      admin && values.key === undefined ? smokeKeys(admin) : undefined
    const options: SmokeOptions = {
      baseUrl: baseUrl ?? (target?.outputs.baseUrl as string),
      key: values.key,
      keys,
      writes,
      report: say,
      signal: io.signal,
      keysCommand: admin?.keysCommand ?? keysCommandFor(baseUrl),
      onTemporaryKey: (id) =>
        io.onKeyLeft?.(
          id === undefined || !keys
            ? undefined
            : `temporary key ${id} is left: revoke it with ${keys.revokeCommand(id)}`,
        ),
    }
    const result = await runSmoke(options)
    if (values.json) {
      const { passed, failed, checks, stopped, answers } = result
      const document = {
        baseUrl: options.baseUrl,
        writes,
        passed,
        failed,
        stopped: stopped ?? null,
        answers,
        checks,
      }
      io.stdout(`${JSON.stringify(document, null, 2)}\n`)
    }
    return result.failed === 0 ? 0 : 1
  } catch (error) {
    const message =
      error instanceof KeyAdminError
        ? error.message
        : `${(error as Error).name}: ${(error as Error).message}`
    io.stderr(`smoke: ${message}\n`)
    return 1
  } finally {
    target?.close()
  }
}
