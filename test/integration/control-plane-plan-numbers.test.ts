import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_SECRET_HEADER } from '#keys/local-control-config.ts'
import { INT32_MAX } from '#keys/usage-plan-numbers-config.ts'
import { createControlPlaneHandler } from '#local/control-plane/control-plane-handler.ts'
import {
  ControlPlaneStore,
  parseControlPlaneFile,
} from '#local/control-plane/control-plane-store.ts'

/**
 * A plan API Gateway would refuse is refused here too (400 with the Error body), and nothing the
 * store's own reader would refuse is ever written: after every refused request the data
 * directory still opens, holding only what was accepted, and no temporary file is left.
 */
const SECRET = 'plan-numbers-test-secret-0123456789abcdef'
let dataDir: string
let server: Server
let origin: string

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'petstore-plan-numbers-'))
  const store = await ControlPlaneStore.open(dataDir, { clock: () => Date.UTC(2026, 10, 22) })
  server = createServer(
    createControlPlaneHandler({
      store,
      flushAuthorizerCache: () => undefined,
      usedToday: () => 0,
      runKeySync: () => Promise.reject(new Error('not in this test')),
      mirrorItem: async () => undefined,
      outputs: () => ({}),
      clock: () => Date.UTC(2026, 10, 22),
      secret: SECRET,
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await rm(dataDir, { recursive: true, force: true })
})

/** The body as raw text: JSON that no JavaScript value serializes to (1e400) goes as written. */
const call = async (method: string, path: string, body?: string) => {
  const response = await fetch(`${origin}/_local/apigateway${path}`, {
    method,
    headers: { [CONTROL_SECRET_HEADER]: SECRET, 'content-type': 'application/json' },
    ...(body !== undefined ? { body } : {}),
  })
  const text = await response.text()
  return {
    status: response.status,
    json: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
  }
}

const plan = (numbers: string) =>
  `{"name":"p","apiStages":[{"apiId":"local","stage":"local"}],${numbers}}`

const reopened = async () => {
  const file = join(dataDir, 'control-plane.json')
  return parseControlPlaneFile(await readFile(file, 'utf8'), file)
}

describe('plan numbers, as API Gateway takes them', () => {
  let accepted: string

  beforeAll(async () => {
    const created = await call(
      'POST',
      '/usageplans',
      plan('"throttle":{"rateLimit":0.5,"burstLimit":120},"quota":{"limit":3000,"period":"DAY"}'),
    )
    expect(created.status).toBe(201)
    accepted = created.json.id as string
  })

  it.each([
    [
      'a rate that is a string',
      '"throttle":{"rateLimit":"x","burstLimit":1}',
      'throttle.rateLimit',
    ],
    [
      'a rate beyond a double (1e400)',
      '"throttle":{"rateLimit":1e400,"burstLimit":1}',
      'throttle.rateLimit',
    ],
    ['a negative rate', '"throttle":{"rateLimit":-1,"burstLimit":1}', 'throttle.rateLimit'],
    ['a fractional burst', '"throttle":{"rateLimit":1,"burstLimit":1.5}', 'throttle.burstLimit'],
    [
      'a burst beyond int32',
      `"throttle":{"rateLimit":1,"burstLimit":${INT32_MAX + 1}}`,
      'throttle.burstLimit',
    ],
    ['a fractional quota', '"quota":{"limit":1.5,"period":"DAY"}', 'quota.limit'],
    ['a quota of 1e400', '"quota":{"limit":1e400,"period":"DAY"}', 'quota.limit'],
    // What `plan create --per-day 4000000000000000` asks for: 3 x per-day.
    [
      'the quota of 3 x 4e15 a day',
      '"quota":{"limit":12000000000000000,"period":"DAY"}',
      'quota.limit',
    ],
    ['a quota that is a string', '"quota":{"limit":"3000","period":"DAY"}', 'quota.limit'],
    [
      'a fractional quota offset',
      '"quota":{"limit":3000,"offset":0.5,"period":"DAY"}',
      'quota.offset',
    ],
  ])('refuses %s with 400 and the Error body, and saves nothing', async (_, numbers, field) => {
    const answer = await call('POST', '/usageplans', plan(numbers))
    expect(answer.status).toBe(400)
    expect(answer.json).toMatchObject({ code: 'BadRequestException', status: 400 })
    expect(answer.json.message).toContain(field)
    expect((await reopened()).usagePlans.map((saved) => saved.id)).toEqual([accepted])
  })

  it.each([
    ['/throttle/burstLimit', '1.5'],
    ['/throttle/burstLimit', String(INT32_MAX + 1)],
    ['/throttle/rateLimit', 'x'],
    ['/throttle/rateLimit', '1e400'],
    ['/quota/limit', '12000000000000000'],
    ['/quota/limit', '2.5'],
    ['/quota/limit', ''],
  ])('refuses a patch of %s to "%s", and keeps the plan as it was', async (path, value) => {
    const answer = await call(
      'PATCH',
      `/usageplans/${accepted}`,
      JSON.stringify({ patchOperations: [{ op: 'replace', path, value }] }),
    )
    expect(answer.status).toBe(400)
    expect(answer.json).toMatchObject({ code: 'BadRequestException', status: 400 })
    const saved = (await reopened()).usagePlans.find((candidate) => candidate.id === accepted)
    expect(saved).toMatchObject({
      throttle: { rateLimit: 0.5, burstLimit: 120 },
      quota: { limit: 3000, offset: 0, period: 'DAY' },
    })
  })

  it('accepts the largest numbers API Gateway does, and reads them back', async () => {
    const answer = await call(
      'POST',
      '/usageplans',
      plan(
        `"throttle":{"rateLimit":1e300,"burstLimit":${INT32_MAX}},"quota":{"limit":${INT32_MAX},"period":"DAY"}`,
      ),
    )
    expect(answer.status).toBe(201)
    const saved = (await reopened()).usagePlans.find((candidate) => candidate.id === answer.json.id)
    expect(saved).toMatchObject({
      throttle: { burstLimit: INT32_MAX },
      quota: { limit: INT32_MAX },
    })
  })
})

describe('malformed bodies', () => {
  it.each([
    ['POST', '/usageplans', '{"name":"p","throttle":"fast","quota":[1]}'],
    ['POST', '/usageplans', '{"name":"p","apiStages":[null,7,"x"],"quota":{"period":"YEAR"}}'],
    ['PATCH', '/usageplans/nosuch', '{"patchOperations":[null,1,"x"]}'],
    ['POST', '/apikeys', '{"value":12345678901234567890123}'],
    ['POST', '/apikeys', '[1,2]'],
    ['POST', '/apikeys', '{"name":'],
    ['PUT', '/tags/arn%3Aaws%3Aapigateway%3A%3A%2Fapikeys%2F%E0%A4%A', '{"tags":{"a":"b"}}'],
  ])('%s %s %s: a 4xx with the Error body, never a 500', async (method, path, body) => {
    const answer = await call(method, path, body)
    expect(answer.status).toBeGreaterThanOrEqual(400)
    expect(answer.status).toBeLessThan(500)
    expect(answer.json).toMatchObject({ status: answer.status, code: expect.any(String) })
    expect(answer.json.message).toEqual(expect.any(String))
  })

  it('leaves no temporary file beside control-plane.json', async () => {
    expect(await readdir(dataDir)).toEqual(['control-plane.json'])
  })
})

describe('the store itself', () => {
  it('saves only what its reader reads back: whole-millisecond dates from a clock with fractions, a refused tag value left out', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'petstore-store-readable-'))
    try {
      const store = await ControlPlaneStore.open(dir, {
        clock: () => Date.UTC(2026, 10, 22) + 0.25,
      })
      const key = await store.createApiKey({ name: 'fractional-clock', enabled: true })
      const untyped = { team: 7 } as unknown as Record<string, string>
      await expect(store.tag(`/apikeys/${key.id}`, untyped)).rejects.toMatchObject({ status: 400 })
      const reopened = await ControlPlaneStore.open(dir, { clock: () => 0 })
      expect(reopened.apiKey(key.id)).toMatchObject({
        createdDate: Date.UTC(2026, 10, 22),
        tags: {},
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
