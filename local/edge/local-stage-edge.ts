import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'
import { ADDRESS_BLOCK_ENV } from '#functions/address-block/address-block-dependencies.ts'
import type { PlanLimits } from '#shared/config/plans-config.ts'
import type { EdgeNumbers } from '#shared/edge/edge-rules-config.ts'
import type { AppLogger } from '#shared/observability/logger.ts'
import type { Clock, Timers } from '#shared/time/clock.ts'
import {
  type AddressBlockInvoker,
  type LocalAddressBlock,
  localAddressBlock,
} from './local-address-block.ts'
import { LocalEdge, localEdgeNumbers } from './local-edge.ts'
import { LocalWaf, WAF_API_PATH } from './local-waf.ts'

/**
 * The local stage's edge, as the local server sets it up (docs/local-server.md, "Local
 * hardening"): the WAF's rules with staging's numbers (local-edge.ts), the operator's and the
 * automatic block's IP sets in a local WAF (local-waf.ts), and the automatic block's function fed
 * by the access log (local-address-block.ts). The machine's own loopback address is the local
 * stage's known egress: a page open in the developer's browser cannot get it blocked.
 */
export const LOCAL_EDGE_EXEMPT: readonly string[] = ['127.0.0.1/32']

/**
 * Starts the address-block function's bundle (`--bundles`, local/bundles/bundle-functions.ts)
 * with the WAF API at `endpoint` and the variables CloudFormation resolves on AWS.
 */
export type StartAddressBlockBundle = (
  endpoint: string,
  environment: Record<string, string>,
) => Promise<AddressBlockInvoker>

/** What tests and the bench see of the automatic block of a running server. */
export interface LocalAddressBlockView
  extends Pick<LocalAddressBlock, 'blocked' | 'reconcile' | 'lift'> {
  /** Delivers the access log records written so far and waits for the function's run. */
  deliverLog(): Promise<void>
  waf: LocalWaf
  /** The IP sets, `name|id|scope`: the operator's list and the automatic block's two. */
  ipSets: { operator: string; ipv4: string; ipv6: string }
}

/** The local server's settings of its edge (StartLocalOptions); tests and the bench set them. */
export interface LocalEdgeSettings {
  /** Wrong keys one address may send in a minute before their 401s go out late (tests raise it). */
  wrongKeysBeforeDelay?: number
  /** The edge's numbers instead of the staging stage's (tests lower a limit to reach it). */
  edgeNumbers?: Partial<EdgeNumbers>
  /** Known egress addresses (CIDRs): skipped by the per-address rules, never blocked. */
  edgeExempt?: readonly string[]
  /** The automatic block's reconcile schedule in ms (0: only when asked); default a minute. */
  addressBlockIntervalMs?: number
  /** How long access log records wait to be delivered together (default a second). */
  accessLogDeliveryMs?: number
}

/** What the edge runs on: the server's DynamoDB, logger and time. */
export interface LocalStageEdgeEnvironment {
  /** The local Enterprise plan (ENTERPRISE_LIMITS): the largest plan and so the per-key rule. */
  enterpriseLimits: PlanLimits
  documentClient: DynamoDBDocumentClient
  /** The automatic block's table. */
  tableName: string
  logger: AppLogger
  clock: Clock
  timers: Timers
}

export const localStageEdge = (settings: LocalEdgeSettings, options: LocalStageEdgeEnvironment) => {
  const numbers = { ...localEdgeNumbers(options.enterpriseLimits), ...settings.edgeNumbers }
  const exempt = settings.edgeExempt ?? LOCAL_EDGE_EXEMPT
  const waf = new LocalWaf()
  const ipSets = {
    operator: waf.createIpSet('petstore-local-blocked-addresses', 'IPV4'),
    ipv4: waf.createIpSet('petstore-local-auto-blocked-ipv4', 'IPV4'),
    ipv6: waf.createIpSet('petstore-local-auto-blocked-ipv6', 'IPV6'),
  }
  const addressBlock = localAddressBlock({
    waf,
    ipSets,
    settings: {
      unauthorizedPerMinute: numbers.wafAutoBlockUnauthorizedPerMinute,
      blockMinutes: numbers.wafAutoBlockMinutes,
      exempt,
    },
    documentClient: options.documentClient,
    tableName: options.tableName,
    logger: options.logger,
    clock: options.clock,
    timers: options.timers,
    ...(settings.addressBlockIntervalMs === undefined
      ? {}
      : { intervalMs: settings.addressBlockIntervalMs }),
    ...(settings.accessLogDeliveryMs === undefined
      ? {}
      : { deliveryMs: settings.accessLogDeliveryMs }),
  })
  const edge = new LocalEdge({
    numbers,
    clock: options.clock,
    exempt,
    blocked: {
      operator: (address) => waf.contains([ipSets.operator], address),
      automatic: addressBlock.blocked,
    },
  })
  const view: LocalAddressBlockView = {
    blocked: addressBlock.blocked,
    reconcile: addressBlock.reconcile,
    lift: addressBlock.lift,
    deliverLog: () => addressBlock.log.flush(),
    waf,
    ipSets,
  }
  return {
    edge,
    waf,
    addressBlock,
    view,
    /**
     * Starts the automatic block's function once the server listens at `origin` (its WAF API is
     * `<origin>/_local/wafv2`), then reconciles: the IP sets start empty, as a deploy leaves
     * them, and blocks still in force in its table go back into them before the server is
     * announced.
     */
    start: async (
      origin: string,
      credentials: { accessKeyId: string; secretAccessKey: string },
      startBundle?: StartAddressBlockBundle,
    ): Promise<void> => {
      const endpoint = `${origin}${WAF_API_PATH}`
      const bundle = await startBundle?.(endpoint, {
        [ADDRESS_BLOCK_ENV.table]: options.tableName,
        [ADDRESS_BLOCK_ENV.ipSetV4]: ipSets.ipv4,
        [ADDRESS_BLOCK_ENV.ipSetV6]: ipSets.ipv6,
        [ADDRESS_BLOCK_ENV.unauthorizedPerMinute]: String(
          numbers.wafAutoBlockUnauthorizedPerMinute,
        ),
        [ADDRESS_BLOCK_ENV.blockMinutes]: String(numbers.wafAutoBlockMinutes),
        [ADDRESS_BLOCK_ENV.exempt]: exempt.join(','),
      })
      addressBlock.start(endpoint, credentials, bundle)
      await addressBlock.reconcile()
    },
  }
}
