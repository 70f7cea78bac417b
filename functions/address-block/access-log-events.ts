import { isIPv4, isIPv6 } from 'node:net'
import { gunzipSync, gzipSync } from 'node:zlib'

/**
 * What the address-block function reads of the stage's access log: CloudWatch Logs delivers the
 * lines its subscription filter matched as `{ awslogs: { data } }`, the data base64-encoded gzip
 * of a JSON document whose `logEvents` each carry one access log line in `message` ("Real-time
 * processing of log data with subscriptions", Amazon CloudWatch Logs User Guide). A line is the
 * JSON of the stage's access log format (infra/constructs/rest-api-construct.ts): its source
 * address in `ip`, its status in `status`.
 */
export interface CloudWatchLogsEvent {
  awslogs: { data: string }
}

export const isCloudWatchLogsEvent = (event: unknown): event is CloudWatchLogsEvent =>
  typeof (event as CloudWatchLogsEvent | undefined)?.awslogs?.data === 'string'

/** One log event of a delivery, as CloudWatch Logs hands it over. */
export interface LogEvent {
  id: string
  /** When it was logged (ms since the epoch). */
  timestamp: number
  message: string
}

/** The decoded payload (DATA_MESSAGE; a CONTROL_MESSAGE only checks that the function answers). */
export interface LogsPayload {
  messageType: 'DATA_MESSAGE' | 'CONTROL_MESSAGE'
  owner?: string
  logGroup?: string
  logStream?: string
  subscriptionFilters?: string[]
  logEvents: LogEvent[]
}

/** The event CloudWatch Logs sends for a payload (the local server delivers its log this way too). */
export const cloudWatchLogsEvent = (payload: LogsPayload): CloudWatchLogsEvent => ({
  awslogs: { data: gzipSync(Buffer.from(JSON.stringify(payload))).toString('base64') },
})

export const decodeLogsEvent = (event: CloudWatchLogsEvent): LogsPayload => {
  const payload = JSON.parse(
    gunzipSync(Buffer.from(event.awslogs.data, 'base64')).toString('utf8'),
  ) as Partial<LogsPayload>
  return {
    messageType: payload.messageType === 'CONTROL_MESSAGE' ? 'CONTROL_MESSAGE' : 'DATA_MESSAGE',
    logEvents: Array.isArray(payload.logEvents) ? payload.logEvents : [],
  }
}

/** The access log's status of an unauthorized answer (a missing, malformed or refused key). */
export const UNAUTHORIZED_STATUS = '401'

/**
 * The CloudWatch Logs filter pattern of the subscription: only unauthorized answers are delivered
 * (the status is a string in the access log's JSON), so ordinary traffic costs the function
 * nothing ("Filter pattern syntax for metric filters, subscription filters, filter log events,
 * and Live Tail", Amazon CloudWatch Logs User Guide).
 */
export const UNAUTHORIZED_FILTER_PATTERN = `{ $.status = "${UNAUTHORIZED_STATUS}" }`

/** An address as WAF's IP sets take it, with its version; undefined for anything else. */
export const addressOf = (
  value: unknown,
): { address: string; version: 'IPV4' | 'IPV6' } | undefined => {
  if (typeof value !== 'string') return undefined
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(value)
  const address = mapped ? (mapped[1] as string) : value.toLowerCase()
  if (isIPv4(address)) return { address, version: 'IPV4' }
  if (isIPv6(address)) return { address, version: 'IPV6' }
  return undefined
}

/** Unauthorized answers per source address and UTC minute (ms of the minute's start). */
export interface UnauthorizedCount {
  address: string
  minute: number
  count: number
}

/**
 * Counts the unauthorized answers of a delivery per address and minute of their log time. Lines
 * that are not the access log's JSON, or whose address is not an IP address, are skipped and
 * counted in `skipped`.
 */
export const countUnauthorized = (
  events: readonly LogEvent[],
): { counts: UnauthorizedCount[]; skipped: number } => {
  const counts = new Map<string, UnauthorizedCount>()
  let skipped = 0
  for (const event of events) {
    let line: { ip?: unknown; status?: unknown }
    try {
      line = JSON.parse(event.message) as typeof line
    } catch {
      skipped += 1
      continue
    }
    const source = addressOf(line?.ip)
    if (
      !source ||
      String(line.status) !== UNAUTHORIZED_STATUS ||
      !Number.isFinite(event.timestamp)
    ) {
      skipped += String(line?.status) === UNAUTHORIZED_STATUS ? 1 : 0
      continue
    }
    const minute = Math.floor(event.timestamp / 60_000) * 60_000
    const key = `${source.address} ${minute}`
    const entry = counts.get(key) ?? { address: source.address, minute, count: 0 }
    entry.count += 1
    counts.set(key, entry)
  }
  return { counts: [...counts.values()], skipped }
}
