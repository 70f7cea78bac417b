import { describe, expect, it } from 'vitest'
import {
  addressOf,
  cloudWatchLogsEvent,
  countUnauthorized,
  decodeLogsEvent,
  isCloudWatchLogsEvent,
  type LogEvent,
} from '#functions/address-block/access-log-events.ts'

const T0 = Date.UTC(2026, 10, 22, 12, 0, 30)
const line = (ip: string, status: string, timestamp = T0, id = '1'): LogEvent => ({
  id,
  timestamp,
  message: JSON.stringify({ requestId: 'r', ip, httpMethod: 'GET', status }),
})

describe('the access log as CloudWatch Logs delivers it', () => {
  it('decodes what it encodes: base64 of gzip of the JSON payload', () => {
    const event = cloudWatchLogsEvent({
      messageType: 'DATA_MESSAGE',
      logGroup: '/petstore/staging/api-access',
      logEvents: [line('198.51.100.7', '401')],
    })
    expect(isCloudWatchLogsEvent(event)).toBe(true)
    expect(isCloudWatchLogsEvent({ source: 'aws.events' })).toBe(false)
    expect(decodeLogsEvent(event)).toEqual({
      messageType: 'DATA_MESSAGE',
      logEvents: [line('198.51.100.7', '401')],
    })
    expect(
      decodeLogsEvent(cloudWatchLogsEvent({ messageType: 'CONTROL_MESSAGE', logEvents: [] }))
        .messageType,
    ).toBe('CONTROL_MESSAGE')
  })

  it('counts unauthorized answers per address and UTC minute, and skips anything else', () => {
    const { counts, skipped } = countUnauthorized([
      line('198.51.100.7', '401'),
      line('198.51.100.7', '401', T0 + 20_000),
      line('198.51.100.7', '401', T0 + 40_000),
      line('198.51.100.7', '200'),
      line('::ffff:198.51.100.8', '401'),
      line('2001:DB8::1', '401'),
      line('not an address', '401'),
      { id: '9', timestamp: T0, message: 'not json' },
    ])
    const minute = Date.UTC(2026, 10, 22, 12, 0, 0)
    expect(counts).toEqual([
      { address: '198.51.100.7', minute, count: 2 },
      { address: '198.51.100.7', minute: minute + 60_000, count: 1 },
      { address: '198.51.100.8', minute, count: 1 },
      { address: '2001:db8::1', minute, count: 1 },
    ])
    expect(skipped).toBe(2)
  })

  it('takes IP addresses of both versions, nothing else', () => {
    expect(addressOf('198.51.100.7')).toEqual({ address: '198.51.100.7', version: 'IPV4' })
    expect(addressOf('2001:db8::7')).toEqual({ address: '2001:db8::7', version: 'IPV6' })
    expect(addressOf('198.51.100.7/32')).toBeUndefined()
    expect(addressOf(42)).toBeUndefined()
  })
})
