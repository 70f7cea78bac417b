import { describe, expect, it } from 'vitest'
import {
  type CloudWatchLogsEvent,
  decodeLogsEvent,
} from '#functions/address-block/access-log-events.ts'
import { type AccessLogRecord, LocalLogSubscription } from '#local/edge/local-access-log.ts'
import type { Timers } from '#shared/time/clock.ts'

const record = (status: string, ip = '127.0.0.2'): AccessLogRecord => ({
  requestId: 'r',
  requestTime: '2026-11-22T12:00:00.000Z',
  ip,
  httpMethod: 'GET',
  path: '/v1/pets',
  status,
})

/** Timers a test fires itself. */
const manualTimers = () => {
  const pending = new Map<symbol, () => void>()
  const timers: Timers = {
    setTimeout: (callback) => {
      const id = Symbol('timer')
      pending.set(id, callback)
      return id
    },
    clearTimeout: (id) => pending.delete(id as symbol),
  }
  return {
    timers,
    fire: () => {
      for (const [id, callback] of [...pending]) {
        pending.delete(id)
        callback()
      }
    },
    count: () => pending.size,
  }
}

describe('the local access log’s subscription', () => {
  it('delivers the unauthorized lines of a batch window as one CloudWatch Logs event', async () => {
    const delivered: CloudWatchLogsEvent[] = []
    const timers = manualTimers()
    const log = new LocalLogSubscription({
      deliver: async (event) => {
        delivered.push(event)
      },
      clock: () => 1_000,
      timers: timers.timers,
    })
    log.write(record('401'))
    log.write(record('200'))
    log.write(record('401', '127.0.0.3'))
    expect(timers.count()).toBe(1)
    timers.fire()
    await log.flush()
    expect(delivered).toHaveLength(1)
    const payload = decodeLogsEvent(delivered[0] as CloudWatchLogsEvent)
    expect(payload.logEvents.map((event) => JSON.parse(event.message).ip)).toEqual([
      '127.0.0.2',
      '127.0.0.3',
    ])
    expect(payload.logEvents.every((event) => event.timestamp === 1_000)).toBe(true)
  })

  it('delivers one batch at a time, keeps going after a failed delivery, and takes nothing once stopped', async () => {
    const order: string[] = []
    let fail = true
    const errors: string[] = []
    const log = new LocalLogSubscription({
      deliver: async (event) => {
        const count = decodeLogsEvent(event as CloudWatchLogsEvent).logEvents.length
        order.push(`start ${count}`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        order.push(`end ${count}`)
        if (fail) {
          fail = false
          throw new Error('function failed')
        }
      },
      clock: () => 0,
      timers: manualTimers().timers,
      onError: (message) => errors.push(message),
    })
    log.write(record('401'))
    const first = log.flush()
    log.write(record('401'))
    log.write(record('401'))
    await Promise.all([first, log.flush()])
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2'])
    expect(errors).toHaveLength(1)
    await log.stop()
    log.write(record('401'))
    await log.flush()
    expect(order).toHaveLength(4)
  })
})
