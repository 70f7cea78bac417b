import { parseArgs } from 'node:util'
import { type KeyAdmin, KeyAdminError } from './key-admin-service.ts'
import type { CommandIo } from './keys-command.ts'
import { runSmoke, type SmokeKeys } from './smoke-runner.ts'
import { openStageTarget, type StageTarget } from './stage-target-resolver.ts'

/**
 * `npm run smoke -- …`: the smoke test of a running stage (smoke-runner.ts). Exit codes: 0 every
 * check passed, 1 a check failed (or the stage could not be reached), 2 a usage error.
 */
const USAGE = `usage: npm run smoke -- [--stage staging|production [--region R]] [--base-url <url>] [--key <key>]
  --stage S        a deployed stage: its BaseUrl (or --base-url, e.g. a custom domain) and a temporary
                   key made and revoked with the keys CLI (needs the operator's AWS credentials)
  --base-url URL   another server; with --key, that key is used as it is; without, the URL must be
                   a local server (npm start), whose control plane makes the temporary key
  (neither)        the local server where npm start listens (HOST, PORT)`

/** The smoke test's management-API part: a temporary Free key, made and revoked with the keys CLI's service. */
export const smokeKeys = (admin: KeyAdmin): SmokeKeys => ({
  create: async () => {
    const key = await admin.createKey({
      selector: { plan: 'free' },
      name: `smoke-${new Date().toISOString()}`,
    })
    return { id: key.id, value: key.value, limits: key.limits }
  },
  revoke: async (id) => {
    await admin.revoke(id)
  },
})

/** The CLI's whole run: `io` takes the process's streams and environment (tests pass their own). */
export const runSmokeCommand = async (argv: string[], io: CommandIo): Promise<number> => {
  const say = (line: string) => io.stdout(`${line}\n`)
  let values: { stage?: string; region?: string; 'base-url'?: string; key?: string; help?: boolean }
  try {
    values = parseArgs({
      args: argv,
      options: {
        stage: { type: 'string' },
        region: { type: 'string' },
        'base-url': { type: 'string' },
        key: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values
  } catch (error) {
    io.stderr(`smoke: ${(error as Error).message}\n${USAGE}\n`)
    return 2
  }
  if (values.help) {
    say(USAGE)
    return 0
  }
  const baseUrl = values['base-url']?.replace(/\/+$/, '')
  if (values.key !== undefined && baseUrl === undefined && values.stage === undefined) {
    io.stderr(`smoke: --key needs --base-url or --stage\n${USAGE}\n`)
    return 2
  }

  let target: StageTarget | undefined
  try {
    if (values.stage !== undefined || values.key === undefined) {
      target = await openStageTarget({
        stage: values.stage,
        url: values.stage === undefined && baseUrl ? new URL(baseUrl).origin : undefined,
        region: values.region,
        env: io.env,
        warn: (message) => io.stderr(`warning: ${message}\n`),
      })
    }
    const admin = target?.admin
    const keys: SmokeKeys | undefined =
      admin && values.key === undefined ? smokeKeys(admin) : undefined
    const result = await runSmoke({
      baseUrl: baseUrl ?? (target?.outputs.baseUrl as string),
      key: values.key,
      keys,
      report: say,
    })
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
