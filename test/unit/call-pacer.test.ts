import { describe, expect, it } from 'vitest'
import { TokenBucketPacer } from '#keys/call-pacer.ts'

/** A clock that only sleeping moves, recording when each call went out. */
const pacedRun = async (calls: number, burst: number, perSecond: number) => {
  let nowMs = 0
  const pacer = new TokenBucketPacer({
    burst,
    perSecond,
    clock: () => nowMs,
    sleep: async (ms) => {
      nowMs += ms
    },
  })
  const sentAt: number[] = []
  for (let i = 0; i < calls; i += 1) {
    await pacer.take()
    sentAt.push(nowMs)
  }
  return sentAt
}

describe('TokenBucketPacer', () => {
  it('lets a burst through at once, then spaces calls at the rate', async () => {
    expect(await pacedRun(6, 3, 5)).toEqual([0, 0, 0, 200, 400, 600])
  })

  it('never delays a sync smaller than the burst', async () => {
    expect(await pacedRun(6, 10, 5)).toEqual([0, 0, 0, 0, 0, 0])
  })

  it('keeps any long run within burst + rate × time', async () => {
    const sentAt = await pacedRun(200, 10, 5)
    const last = sentAt.at(-1) ?? 0
    expect(200).toBeLessThanOrEqual(10 + (5 * last) / 1000 + 1)
    expect(last).toBe(((200 - 10) * 1000) / 5)
  })

  it('refuses a bucket that could never send', () => {
    expect(() => new TokenBucketPacer({ burst: 0, perSecond: 5 })).toThrow()
    expect(() => new TokenBucketPacer({ burst: 1, perSecond: 0 })).toThrow()
  })
})
