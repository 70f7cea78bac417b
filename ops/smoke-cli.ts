import { parseArgs } from 'node:util'
import { KeyAdminError } from './key-admin-service.ts'
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

const say = (line: string) => process.stdout.write(`${line}\n`)

const main = async (): Promise<number> => {
  let values: { stage?: string; region?: string; 'base-url'?: string; key?: string; help?: boolean }
  try {
    values = parseArgs({
      options: {
        stage: { type: 'string' },
        region: { type: 'string' },
        'base-url': { type: 'string' },
        key: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values
  } catch (error) {
    process.stderr.write(`smoke: ${(error as Error).message}\n${USAGE}\n`)
    return 2
  }
  if (values.help) {
    say(USAGE)
    return 0
  }
  const baseUrl = values['base-url']?.replace(/\/+$/, '')
  if (values.key !== undefined && baseUrl === undefined && values.stage === undefined) {
    process.stderr.write(`smoke: --key needs --base-url or --stage\n${USAGE}\n`)
    return 2
  }

  let target: StageTarget | undefined
  try {
    if (values.stage !== undefined || values.key === undefined) {
      target = await openStageTarget({
        stage: values.stage,
        url: values.stage === undefined && baseUrl ? new URL(baseUrl).origin : undefined,
        region: values.region,
        env: process.env,
        warn: (message) => process.stderr.write(`warning: ${message}\n`),
      })
    }
    const admin = target?.admin
    const keys: SmokeKeys | undefined =
      admin && values.key === undefined
        ? {
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
          }
        : undefined
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
    process.stderr.write(`smoke: ${message}\n`)
    return 1
  } finally {
    target?.close()
  }
}

process.exitCode = await main()
