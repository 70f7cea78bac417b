import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { keyFingerprint } from '#shared/auth/key-store.ts'
import { isPlanName, PLAN_NAMES } from '#shared/config/plans-config.ts'
import { IN_MEMORY } from './embedded-dynamo.ts'
import { generateApiKey, keyFilePath, readKeyFile, writeKeyFile } from './local-key-store.ts'

/**
 * `npm run keys -- create --plan pro | list | revoke <key or id>`: manages the local keys in
 * PETSTORE_DATA_DIR. A running `npm start` picks changes up on the next request.
 */
const USAGE = `usage: npm run keys -- <command>
  create --plan <${PLAN_NAMES.join('|')}>   create a key and print it
  list                                   list keys (id, plan, created, state, key)
  revoke <key or id>                     revoke a key`

const fail = (message: string): never => {
  process.stderr.write(`keys: ${message}\n`)
  process.exit(2)
}

const main = async () => {
  const dataDir = process.env.PETSTORE_DATA_DIR?.trim() || '.petstore'
  if (dataDir === IN_MEMORY)
    fail('PETSTORE_DATA_DIR is :memory:, so there is no key file to manage')
  const file = keyFilePath(dataDir)
  const { values, positionals } = parseArgs({
    options: { plan: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  })
  const [command, target] = positionals
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  const keys = await readKeyFile(file)
  switch (command) {
    case 'create': {
      const plan = values.plan?.toLowerCase() ?? ''
      if (!isPlanName(plan)) fail(`--plan must be one of ${PLAN_NAMES.join(', ')}`)
      const entry = {
        plan: plan as (typeof PLAN_NAMES)[number],
        key: generateApiKey(plan as (typeof PLAN_NAMES)[number]),
        createdAt: new Date().toISOString(),
      }
      await writeKeyFile(file, [...keys, entry])
      process.stdout.write(`${entry.key}\n`)
      process.stderr.write(
        `created a ${plan} key (id ${keyFingerprint(entry.key)}) in ${resolve(file)}\n`,
      )
      return
    }
    case 'list': {
      if (keys.length === 0) process.stderr.write(`no keys in ${resolve(file)}\n`)
      for (const entry of keys) {
        const state = entry.revokedAt ? `revoked ${entry.revokedAt}` : 'active'
        process.stdout.write(
          `${keyFingerprint(entry.key)}  ${entry.plan.padEnd(10)}  ${entry.createdAt}  ${state.padEnd(32)}  ${entry.key}\n`,
        )
      }
      return
    }
    case 'revoke': {
      if (!target) fail('revoke needs the key or its id')
      const entry = keys.find(
        (candidate) => candidate.key === target || keyFingerprint(candidate.key) === target,
      )
      if (!entry) fail(`no key ${target?.slice(0, 12)}... in ${resolve(file)}`)
      else if (entry.revokedAt)
        process.stderr.write(`key ${keyFingerprint(entry.key)} was already revoked\n`)
      else {
        entry.revokedAt = new Date().toISOString()
        await writeKeyFile(file, keys)
        process.stderr.write(`revoked key ${keyFingerprint(entry.key)}\n`)
      }
      return
    }
    default:
      fail(`unknown command "${command}"\n${USAGE}`)
  }
}

main().catch((error: unknown) => fail((error as Error).message))
