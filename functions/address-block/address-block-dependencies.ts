import { WAFV2Client } from '@aws-sdk/client-wafv2'
import { requireEnv } from '#shared/config/env-config.ts'
import { createDocumentClient, dynamoConfigFromEnv } from '#shared/data/dynamo-client.ts'
import { baseMiddlewares } from '#shared/observability/observability-middleware.ts'
import { functionBase } from '#shared/wiring/function-dependencies.ts'
import type {
  AddressBlockDependencies,
  AddressBlockEvent,
  AddressBlockResult,
} from './address-block-handler.ts'
import { AddressBlockRepository } from './address-block-repository.ts'
import type { AddressBlockSettings } from './address-block-run.ts'
import { IpSetWriter, parseIpSetRef } from './ip-set-writer.ts'

// What the address-block function is built of, from its environment: clients, table, IP sets.

/** The `operation` dimension of its metrics and its Powertools service name. */
export const ADDRESS_BLOCK_OPERATION = 'address-block'

/** Its environment, as the CDK sets it (infra/constructs/address-block-construct.ts). */
export const ADDRESS_BLOCK_ENV = {
  table: 'ADDRESS_BLOCK_TABLE_NAME',
  ipSetV4: 'AUTO_BLOCK_IP_SET_V4',
  ipSetV6: 'AUTO_BLOCK_IP_SET_V6',
  unauthorizedPerMinute: 'AUTO_BLOCK_UNAUTHORIZED_PER_MINUTE',
  blockMinutes: 'AUTO_BLOCK_MINUTES',
  exempt: 'AUTO_BLOCK_EXEMPT',
} as const

const positiveInteger = (name: string, env: NodeJS.ProcessEnv): number => {
  const value = Number(requireEnv(name, env))
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`${name} must be a whole number of at least 1, got "${env[name]}"`)
  }
  return value
}

export const addressBlockSettingsOf = (env: NodeJS.ProcessEnv): AddressBlockSettings => ({
  unauthorizedPerMinute: positiveInteger(ADDRESS_BLOCK_ENV.unauthorizedPerMinute, env),
  blockMinutes: positiveInteger(ADDRESS_BLOCK_ENV.blockMinutes, env),
  exempt: (env[ADDRESS_BLOCK_ENV.exempt] ?? '')
    .split(',')
    .map((cidr) => cidr.trim())
    .filter((cidr) => cidr.length > 0),
})

/**
 * WAF's client: short timeouts (the schedule's next run is the real retry) and the SDK's standard
 * retries, which outwait WAF's throttling of about one update a second. The options object makes
 * the SDK build its own NodeHttpHandler. Locally `AWS_ENDPOINT_URL_WAFV2` points it at the local
 * server's WAF (docs/local-server.md).
 */
export const addressBlockWafClient = (
  config: ConstructorParameters<typeof WAFV2Client>[0] = {},
): WAFV2Client =>
  new WAFV2Client({
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000 },
    ...config,
  })

/**
 * The function's dependencies, built once per instance from its environment; a missing variable
 * fails the cold start. Counting writes go through a client of their own that never sends a write
 * twice: a count repeated after a lost answer would count answers that were never logged.
 */
export const addressBlockDependencies = (
  env: NodeJS.ProcessEnv = process.env,
  waf: WAFV2Client = addressBlockWafClient(),
): AddressBlockDependencies => {
  const tableName = requireEnv(ADDRESS_BLOCK_ENV.table, env)
  const { logger, metrics, clock, dynamo } = functionBase(ADDRESS_BLOCK_OPERATION, env)
  const countingClient = createDocumentClient({
    ...dynamoConfigFromEnv(env),
    maxAttempts: 1,
  })
  return {
    repository: new AddressBlockRepository({ client: dynamo, countingClient, tableName }),
    ipSets: {
      IPV4: new IpSetWriter({
        client: waf,
        ref: parseIpSetRef(requireEnv(ADDRESS_BLOCK_ENV.ipSetV4, env)),
      }),
      IPV6: new IpSetWriter({
        client: waf,
        ref: parseIpSetRef(requireEnv(ADDRESS_BLOCK_ENV.ipSetV6, env)),
      }),
    },
    settings: addressBlockSettingsOf(env),
    logger,
    metrics,
    clock,
    observability: baseMiddlewares<AddressBlockEvent, AddressBlockResult>(logger, metrics),
  }
}
