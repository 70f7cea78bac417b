import { resolve } from 'node:path'
import { CONTROL_SECRET_VARIABLE, dataDirAssignment } from '#keys/local-control-config.ts'
import { MANAGEMENT_API_PATH } from '#local/control-plane/control-plane-handler.ts'
import { controlSecretLocation } from '#local/control-plane/control-plane-secret.ts'
import { IN_MEMORY } from './embedded-dynamo.ts'
import { DEFAULT_PORT, type LocalConfig } from './local-config.ts'
import type { LocalServer } from './local-server.ts'

/**
 * What `npm start` prints once the server listens: where, which datastore, the keys (a created key
 * once, a given key never) and how to manage them. Its own module so a unit test reads every line
 * without starting a process.
 */
export const startBanner = (
  config: LocalConfig,
  local: Pick<LocalServer, 'baseUrl' | 'embedded' | 'endpoint' | 'keys'>,
): string[] => {
  const origin = new URL(local.baseUrl).origin
  // The keys CLI finds the secret as npm start did: a data directory of one's own is named on its
  // command line (a variable the operator set is theirs to give it too). Memory keeps no secret.
  const noSecretFile = config.controlSecret === undefined && config.dataDir === IN_MEMORY
  const assignment =
    config.controlSecret === undefined && !noSecretFile ? dataDirAssignment(config.dataDir) : ''
  const keysCli = (silent: boolean) =>
    `${assignment}npm run${silent ? ' -s' : ''} keys --${config.port === DEFAULT_PORT ? '' : ` --url ${origin}`}`
  const keysCommand = keysCli(false)
  return [
    `Pet store API listening at ${local.baseUrl}`,
    ...(config.bundles
      ? [
          `Functions: the bundles of ${resolve(config.bundles.assemblyDir)} (${config.bundles.stage} template), one process each`,
        ]
      : []),
    `DynamoDB: ${local.embedded ? `embedded, data in ${config.dataDir === IN_MEMORY ? 'memory (not kept)' : resolve(config.dataDir)}` : local.endpoint}`,
    'API keys (send as "Authorization: Bearer <key>"):',
    ...local.keys.created.map((entry) => `  ${entry.plan.padEnd(10)} ${entry.key}   (new)`),
    ...local.keys.fromEnv.map(
      (entry) => `  ${entry.plan.padEnd(10)} from PETSTORE_API_KEYS (id ${entry.id})`,
    ),
    ...(local.keys.imported > 0 && local.keys.file
      ? [
          `  ${local.keys.imported} key(s) moved from api-keys.json into ${resolve(local.keys.file)}`,
        ]
      : []),
    // A key's value is shown once, when it is made (as API Gateway's console does): after a
    // restart the way to a working key is a new one, not the list (ids and plans only).
    ...(local.keys.others > 0
      ? [
          `  ${local.keys.others} key(s) from earlier starts (values are shown only when made; ids: ${keysCommand} list)`,
          `  a key to use now: KEY=$(${keysCli(true)} create --plan free)`,
        ]
      : []),
    `Control plane secret (npm run keys reads it): ${controlSecretLocation(config.dataDir, config.controlSecret)}`,
    noSecretFile
      ? `Keys: npm run keys cannot reach this server's keys (data in memory, no ${CONTROL_SECRET_VARIABLE}): start with ${CONTROL_SECRET_VARIABLE} set, and give the keys CLI the same`
      : `Keys: ${keysCommand} create --plan pro | list | revoke <id>${config.controlSecret === undefined ? '' : ` (with the same ${CONTROL_SECRET_VARIABLE})`} (control plane at ${origin}${MANAGEMENT_API_PATH})`,
    `Try: curl -H "Authorization: Bearer <key>" ${local.baseUrl}/pets`,
    `API reference: ${origin}/docs   One line per request follows.`,
  ]
}
