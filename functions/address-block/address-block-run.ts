import { BlockList } from 'node:net'
import type { Logger } from '@aws-lambda-powertools/logger'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import type { Clock } from '#shared/time/clock.ts'
import { addressOf, countUnauthorized, type LogEvent } from './access-log-events.ts'
import type { AddressBlock, AddressBlockRepository } from './address-block-repository.ts'
import { IP_SET_CAPACITY, type IpSetOutcome, type IpSetWriter } from './ip-set-writer.ts'

/** What the automatic block does, from the stage's settings (docs/operations.md, "Automatic block"). */
export interface AddressBlockSettings {
  /** Unauthorized answers one address may get in a UTC minute; one more blocks it. */
  unauthorizedPerMinute: number
  blockMinutes: number
  /** CIDRs never blocked: the stage's known egress addresses (`wafExemptAddresses`). */
  exempt: readonly string[]
}

export interface AddressBlockRunDependencies {
  repository: AddressBlockRepository
  /** The automatic block's IP sets, one per IP version. */
  ipSets: Record<AddressBlock['version'], IpSetWriter>
  settings: AddressBlockSettings
  logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** Where its metrics go (Powertools' Metrics; locally nowhere). */
  metrics: {
    addMetric(
      name: string,
      unit: (typeof MetricUnit)[keyof typeof MetricUnit],
      value: number,
    ): unknown
  }
  clock: Clock
}

/** Emitted by every run (namespace Petstore/<stage>, operation address-block). */
export const ADDRESS_BLOCK_METRICS = {
  /** Addresses blocked by this run (new blocks, not renewals). */
  newBlocks: 'AddressBlockNewBlocks',
  /** Blocks in force after a run that wrote the IP sets. */
  activeBlocks: 'AddressBlockActive',
  /** Counting writes or IP set updates that failed (the schedule's run catches up). */
  failures: 'AddressBlockFailures',
  /** Blocks left out of a full IP set (10,000 addresses per version). */
  overflow: 'AddressBlockOverflow',
} as const

export interface RecordResult {
  kind: 'record'
  /** Unauthorized answers read in the delivery. */
  unauthorized: number
  /** Addresses this delivery blocked. */
  blocked: string[]
  failures: number
  ipSets?: ReconcileResult['ipSets']
}

export interface ReconcileResult {
  kind: 'reconcile'
  ipSets: Record<AddressBlock['version'], IpSetOutcome | 'failed'>
  /** Blocks in force. */
  active: number
  /** Blocks that ended and left the IP sets in this run. */
  ended: string[]
}

export interface LiftResult {
  kind: 'lift'
  lifted: string[]
  ipSets: ReconcileResult['ipSets']
}

/** Counting writes in flight at once (a delivery from a spread-out flood names many addresses). */
const CONCURRENT_WRITES = 16

const inBatches = async <T>(items: readonly T[], work: (item: T) => Promise<void>) => {
  for (let start = 0; start < items.length; start += CONCURRENT_WRITES) {
    await Promise.all(items.slice(start, start + CONCURRENT_WRITES).map(work))
  }
}

/**
 * CIDRs as a matcher of addresses (node:net's BlockList reads IPv4 and IPv6; an IPv4-mapped IPv6
 * address is read as IPv4): the stage's exemptions here, an IP set's addresses in the local WAF.
 */
export const addressMatcher = (cidrs: readonly string[]): ((address: string) => boolean) => {
  const list = new BlockList()
  for (const cidr of cidrs) {
    const [base = '', prefix] = cidr.split('/')
    const version = base.includes(':') ? 'ipv6' : 'ipv4'
    list.addSubnet(base, Number(prefix ?? (version === 'ipv6' ? 128 : 32)), version)
  }
  return (address) => {
    const source = addressOf(address)
    return (
      source !== undefined &&
      list.check(source.address, source.version === 'IPV6' ? 'ipv6' : 'ipv4')
    )
  }
}

/** An address as its IP set holds it: one host. */
const cidrOf = (block: AddressBlock) => `${block.address}/${block.version === 'IPV4' ? 32 : 128}`

/**
 * The automatic block: an address whose unauthorized answers in one UTC minute exceed
 * `unauthorizedPerMinute` is blocked as a whole for `blockMinutes`, then unblocked, by these steps:
 * - record: a delivery of the access log's unauthorized lines is counted per address and minute
 *   (one counting write each, never repeated: a lost write counts less, never more); an address
 *   over the rate gets a block record, and new blocks go into the IP sets at once;
 * - reconcile (every minute, and after new blocks): each IP set is made to hold exactly the
 *   blocks in force, newest first up to 10,000, exempted addresses never; ended blocks are then
 *   deleted;
 * - lift: an operator ends named blocks now.
 * A delivery never fails after it counted (CloudWatch Logs would deliver it again, counting it
 * twice): failures are logged and counted, and the next reconcile catches up.
 */
export const addressBlockRun = ({
  repository,
  ipSets,
  settings,
  logger,
  metrics,
  clock,
}: AddressBlockRunDependencies) => {
  const exempt = addressMatcher(settings.exempt)
  const blockMs = settings.blockMinutes * 60_000

  const reconcile = async (): Promise<ReconcileResult> => {
    const now = clock()
    const blocks = await repository.blocks()
    const active = blocks.filter((block) => block.until > now && !exempt(block.address))
    const ended = blocks.filter((block) => block.until <= now)
    const outcomes = {} as ReconcileResult['ipSets']
    for (const version of ['IPV4', 'IPV6'] as const) {
      const wanted = active
        .filter((block) => block.version === version)
        .sort((a, b) => b.since - a.since)
      if (wanted.length > IP_SET_CAPACITY) {
        metrics.addMetric(
          ADDRESS_BLOCK_METRICS.overflow,
          MetricUnit.Count,
          wanted.length - IP_SET_CAPACITY,
        )
        logger.error('Automatic block list full: the oldest blocks are left out', {
          version,
          blocks: wanted.length,
          capacity: IP_SET_CAPACITY,
        })
      }
      try {
        outcomes[version] = await ipSets[version].ensure(
          wanted.slice(0, IP_SET_CAPACITY).map(cidrOf),
        )
      } catch (error) {
        outcomes[version] = 'failed'
        metrics.addMetric(ADDRESS_BLOCK_METRICS.failures, MetricUnit.Count, 1)
        logger.error('Automatic block list could not be written', {
          ipSet: ipSets[version].name,
          error,
        })
      }
    }
    const written = outcomes.IPV4 !== 'failed' && outcomes.IPV6 !== 'failed'
    if (written) {
      await inBatches(ended, (block) => repository.removeEnded(block.address, now))
      metrics.addMetric(ADDRESS_BLOCK_METRICS.activeBlocks, MetricUnit.Count, active.length)
      if (ended.length > 0) {
        logger.info('Automatic blocks ended', { addresses: ended.map((block) => block.address) })
      }
    }
    return {
      kind: 'reconcile',
      ipSets: outcomes,
      active: active.length,
      ended: written ? ended.map((block) => block.address) : [],
    }
  }

  const record = async (events: readonly LogEvent[]): Promise<RecordResult> => {
    const now = clock()
    const { counts } = countUnauthorized(events)
    const blocked: string[] = []
    let failures = 0
    await inBatches(
      counts.filter((count) => !exempt(count.address)),
      async ({ address, minute, count }) => {
        try {
          const total = await repository.addUnauthorized(address, minute, count)
          // A late delivery of a minute whose block would have ended already blocks nothing.
          if (total <= settings.unauthorizedPerMinute || minute + 60_000 + blockMs <= now) return
          const version = addressOf(address)?.version ?? 'IPV4'
          const block = { address, version, since: now, until: now + blockMs, count: total }
          if (await repository.block(block, now)) {
            blocked.push(address)
            logger.warn('Address blocked automatically', {
              address,
              unauthorizedInMinute: total,
              minute: new Date(minute).toISOString(),
              until: new Date(block.until).toISOString(),
            })
          }
        } catch (error) {
          failures += 1
          logger.error('Unauthorized answers could not be counted', { address, error })
        }
      },
    )
    metrics.addMetric(ADDRESS_BLOCK_METRICS.newBlocks, MetricUnit.Count, blocked.length)
    if (failures > 0) metrics.addMetric(ADDRESS_BLOCK_METRICS.failures, MetricUnit.Count, failures)
    const unauthorized = counts.reduce((sum, count) => sum + count.count, 0)
    if (blocked.length === 0) return { kind: 'record', unauthorized, blocked, failures }
    try {
      const { ipSets: outcomes } = await reconcile()
      return { kind: 'record', unauthorized, blocked, failures, ipSets: outcomes }
    } catch (error) {
      // The block records are written: the scheduled reconcile puts them into the IP sets.
      logger.error('Automatic blocks could not be applied yet', { error })
      return { kind: 'record', unauthorized, blocked, failures: failures + 1 }
    }
  }

  const lift = async (addresses: readonly string[]): Promise<LiftResult> => {
    const lifted: string[] = []
    for (const address of addresses) {
      const source = addressOf(address)
      if (source && (await repository.lift(source.address))) lifted.push(source.address)
    }
    logger.info('Automatic blocks lifted by an operator', { lifted, asked: addresses })
    const { ipSets: outcomes } = await reconcile()
    return { kind: 'lift', lifted, ipSets: outcomes }
  }

  return { record, reconcile, lift }
}
