/**
 * Store keys at scale, as properties with the numbers behind them (docs/capacity.md, "Store keys
 * at scale"). On the embedded DynamoDB by default; on DynamoDB Local (or any DynamoDB) with
 * DYNAMODB_ENDPOINT. Prints, for N store keys (default 100,000; `--keys N`):
 * - making them as the keys CLI does (MAC, hash, BatchWriteItem): time and write units;
 * - storage per key per month, DynamoDB's 100-byte item overhead included;
 * - what one authorizer lookup costs: a store key, a forged project key, a console-shaped forgery
 *   (DynamoDB reads per lookup, counted at the client, and time);
 * - `keys list` on the table: a page, a larger page, a page filtered to a 1% plan, every page;
 * - the month export (`keys usage --month`) with one day of use for every key;
 * - the key sync's time, calls and reads with no store key and with N (it never reads them);
 * - one store key's flood through the local usage-plan emulation: another store key's gateway
 *   429s under the pool plan, and under one bucket sized as a key's backstop;
 * - the authorizer cache's hit rate for traffic spread over many keys.
 * Run: npm run bench:store-keys [-- --keys 1000000] (with DYNAMODB_ENDPOINT for DynamoDB Local).
 */
import { loadavg } from 'node:os'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb'
import { StageKeyStore } from '#functions/authorizer/stage-key-store.ts'
import { keySyncHandler } from '#functions/key-sync/key-sync-handler.ts'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { newProjectKey } from '#keys/api-key-value.ts'
import { KeyMirrorWriter } from '#keys/key-mirror-writer.ts'
import { KeySyncStateRepository } from '#keys/key-sync-state-repository.ts'
import { KeyUsageRepository } from '#keys/key-usage-repository.ts'
import { StoreKeyRepository } from '#keys/store-key-repository.ts'
import { ensureTable, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { AuthorizerCache } from '#local/gateway/authorizer-cache.ts'
import { usagePlanVerdict } from '#local/gateway/local-gateway.ts'
import { UsagePlanThrottle } from '#local/gateway/usage-plan-throttle.ts'
import { PLAN_LIMITS, type PlanName } from '#shared/config/plans-config.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { hashApiKey } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'
import type { StoreKeyItem } from '#shared/data/store-key-item.ts'
import { StoreKeyReader } from '#shared/data/store-key-reader.ts'
import {
  keyMirrorTableDefinition,
  RATE_LIMIT_TABLE,
  rateLimitTableDefinition,
  storeKeyTableDefinition,
} from '#shared/data/table-keys.ts'
import { dayItemKey } from '#shared/rate-limit/rate-limiter.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  planTags,
} from '#test/support/fake-api-gateway.ts'
import { fakeLogger } from '#test/support/fake-logger.ts'

const argument = (name: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at < 0 ? undefined : process.argv[at + 1]
}
const KEYS = Number(argument('keys') ?? 100_000)
const CONCURRENCY = 8
const MAC_SECRETS = new Map([[1, 'bench-mac-secret-0123456789abcdef0123456789abcdef']])
const POOL_KEY = 'bench-pool-usage-key-0123456789abcdefABCD'
/** AWS prices, us-east-1 on-demand: per million read units, per GB-month stored, PITR per GB-month. */
const PRICE = {
  readUnitPerMillion: 0.125,
  writeUnitPerMillion: 0.625,
  gbMonth: 0.25,
  pitrGbMonth: 0.2,
}

const external = process.env.DYNAMODB_ENDPOINT
const embedded = external ? undefined : await startEmbeddedDynamo(IN_MEMORY)
const config = {
  endpoint: external ?? (embedded?.endpoint as string),
  region: process.env.AWS_REGION ?? 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
}
const client = new DynamoDBClient(config)

/** DynamoDB calls and the capacity they consumed, as DynamoDB reports it, by command. */
const tally = { calls: new Map<string, number>(), readUnits: 0, writeUnits: 0 }
const resetTally = () => {
  tally.calls.clear()
  tally.readUnits = 0
  tally.writeUnits = 0
}
const documentClient = createDocumentClient(config)
documentClient.middlewareStack.add(
  (next, context) => async (args) => {
    const input = args.input as Record<string, unknown>
    input.ReturnConsumedCapacity ??= 'TOTAL'
    const result = await next(args)
    const command = context.commandName ?? 'unknown'
    tally.calls.set(command, (tally.calls.get(command) ?? 0) + 1)
    const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity
    for (const entry of [consumed].flat() as { CapacityUnits?: number }[]) {
      if (!entry) continue
      const units = entry.CapacityUnits ?? 0
      if (/Write|Put|Update|Delete/.test(command)) tally.writeUnits += units
      else tally.readUnits += units
    }
    return result
  },
  { step: 'initialize', name: 'benchTally' },
)

const suffix = Date.now().toString(36)
const tables = {
  storeKeys: `bench-store-keys-${suffix}`,
  rateLimits: `bench-rate-limits-${suffix}`,
  mirror: `bench-key-mirror-${suffix}`,
}
await ensureTable(client, storeKeyTableDefinition(tables.storeKeys))
await ensureTable(client, rateLimitTableDefinition(tables.rateLimits))
await ensureTable(client, keyMirrorTableDefinition(tables.mirror))
const storeKeys = new StoreKeyRepository({ client: documentClient, tableName: tables.storeKeys })

const out = (line = '') => process.stdout.write(`${line}\n`)
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const seconds = (ms: number) => `${fmt(ms / 1000, 1)} s`
const timed = async <T>(run: () => Promise<T>) => {
  const started = performance.now()
  const value = await run()
  return { value, ms: performance.now() - started }
}

out(
  `Store keys at scale: ${fmt(KEYS)} keys on ${external ? `DynamoDB at ${external}` : 'the embedded DynamoDB (dynalite, in memory)'}; Node ${process.version}; load average at start ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`,
)

// --- The key sync with no store key (it never reads the store key table). ---
const gateway = new FakeApiGateway()
for (let p = 0; p < 4; p += 1) gateway.addPlan(`plan${p}`, { tags: planTags('pro') })
for (let k = 0; k < 100; k += 1) gateway.addKey(`key${k}`, `plan${k % 4}`)
const sync = keySyncHandler({
  source: new ApiGatewayKeySource({
    client: gateway.client,
    restApiId: FAKE_API_ID,
    stage: FAKE_STAGE,
  }),
  mirror: new KeyMirrorWriter({ client: documentClient, tableName: tables.mirror }),
  state: new KeySyncStateRepository({ client: documentClient, tableName: tables.mirror }),
  flusher: { flush: async () => undefined },
  logger: fakeLogger(),
  metrics: { addMetric: () => undefined },
  clock: Date.now,
  sendResponse: async () => undefined,
})
const syncRun = async () => {
  resetTally()
  const { ms } = await timed(() =>
    sync(
      { 'detail-type': 'Scheduled Event' } as never,
      {
        getRemainingTimeInMillis: () => 60_000,
      } as never,
    ),
  )
  return {
    ms,
    calls: [...tally.calls.values()].reduce((a, b) => a + b, 0),
    readUnits: tally.readUnits,
  }
}
await syncRun() // the first run fills the mirror
const syncBefore = await syncRun()

// --- Making N keys, as the keys CLI does. ---
const planOf = (n: number): PlanName => (n % 100 === 0 ? 'business' : n % 10 === 0 ? 'pro' : 'free')
const samples: { value: string; keyId: string }[] = []
let mintMs = 0
resetTally()
const made = await timed(async () => {
  let next = 0
  const worker = async () => {
    while (next < KEYS) {
      const start = next
      next += 1_000
      const items: StoreKeyItem[] = []
      const minted = performance.now()
      for (let n = start; n < Math.min(start + 1_000, KEYS); n += 1) {
        const { value, keyId } = newProjectKey('store', MAC_SECRETS)
        const plan = planOf(n)
        items.push({
          keyId: keyId as string,
          keyHash: hashApiKey(value),
          name: `customer-${n}`,
          plan,
          ...PLAN_LIMITS[plan],
          enabled: true,
          createdAt: new Date(Date.UTC(2026, 10, 1) + n).toISOString(),
          macVersion: 1,
        })
        if (n % Math.max(1, Math.floor(KEYS / 1_000)) === 0)
          samples.push({ value, keyId: keyId as string })
      }
      mintMs += performance.now() - minted
      await storeKeys.putMany(items)
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
})
const writeUnits = tally.writeUnits
out()
out('Making keys (the keys CLI: MAC and hash, then BatchWriteItem of 25, 8 writers at once)')
out(
  `  ${fmt(KEYS)} keys in ${seconds(made.ms)} (${fmt(KEYS / (made.ms / 1000))} keys/s; minting ${seconds(mintMs)} of CPU), ${fmt(writeUnits)} write units (${fmt(writeUnits / KEYS, 2)} a key: $${fmt((writeUnits / 1e6) * PRICE.writeUnitPerMillion, 2)} on demand)`,
)

// --- Storage per key. ---
/** DynamoDB's item size: attribute names and values (UTF-8; numbers about 1 byte per 2 digits + 1). */
const itemBytes = (item: Record<string, unknown>) =>
  Object.entries(item).reduce((sum, [name, value]) => {
    const size =
      typeof value === 'string'
        ? Buffer.byteLength(value)
        : typeof value === 'number'
          ? Math.ceil(String(value).replace(/^0\./, '').length / 2) + 1
          : 1
    return sum + Buffer.byteLength(name) + size
  }, 0)
const sampleItems = await Promise.all(
  samples.slice(0, 200).map(({ keyId }) => storeKeys.get(keyId)),
)
const averageBytes =
  sampleItems.reduce(
    (sum, item) => sum + itemBytes(item as unknown as Record<string, unknown>),
    0,
  ) / sampleItems.length
const stored = averageBytes + 100
out()
out('Storage (DynamoDB bills an item as its attributes plus 100 bytes of overhead)')
out(
  `  ${fmt(averageBytes)} bytes of attributes + 100 = ${fmt(stored)} bytes a key; 1,000,000 keys: ${fmt((stored * 1e6) / 1e9, 2)} GB, $${fmt(((stored * 1e6) / 1e9) * PRICE.gbMonth, 3)} a month ($${fmt(((stored * 1e6) / 1e9) * PRICE.pitrGbMonth, 3)} more with point-in-time recovery): $${fmt((stored / 1e9) * (PRICE.gbMonth + PRICE.pitrGbMonth) * 1e6, 3)} per million keys per month`,
)

// --- What one authorizer lookup costs. ---
const reads = { store: 0, mirror: 0 }
const mirrorReader = new KeyMirrorReader({ client: documentClient, tableName: tables.mirror })
const storeReader = new StoreKeyReader({ client: documentClient, tableName: tables.storeKeys })
const keyStore = new StageKeyStore({
  mirror: {
    get: (...args) => {
      reads.mirror += 1
      return mirrorReader.get(...args)
    },
  },
  storeKeys: {
    get: (...args) => {
      reads.store += 1
      return storeReader.get(...args)
    },
  },
  macSecrets: MAC_SECRETS,
  poolKey: POOL_KEY,
  clock: Date.now,
})
const lookups = async (label: string, keys: string[], expectValid: boolean) => {
  reads.store = 0
  reads.mirror = 0
  resetTally()
  const { ms } = await timed(async () => {
    for (const key of keys) {
      const caller = await keyStore.lookup(key)
      if ((caller !== undefined) !== expectValid) throw new Error(`${label}: unexpected answer`)
    }
  })
  const perLookup = (reads.store + reads.mirror) / keys.length
  out(
    `  ${label.padEnd(44)} ${fmt(perLookup, 2)} reads (${fmt(tally.readUnits / keys.length, 2)} read units) a lookup, ${fmt((ms * 1000) / keys.length)} µs`,
  )
}
const sampleValues = samples.map(({ value }) => value).slice(0, 1_000)
const forgedProject = sampleValues.map((value) =>
  value.replace(/_[0-9a-f]{32}$/, `_${'0'.repeat(32)}`),
)
const random = () => Math.random().toString(36).slice(2, 12)
const forgedConsole = sampleValues.map(() => `${random()}${random()}${random()}${random()}`)
out()
out(`The authorizer's lookup (${fmt(sampleValues.length)} of each; strongly consistent GetItem)`)
await lookups('a store key', sampleValues, true)
await lookups('a forged store key (the format, a wrong MAC)', forgedProject, false)
await lookups('a console-shaped forgery (no MAC to check)', forgedConsole, false)

// --- keys list. ---
out()
out('keys list on the store key table (a Scan a page at a time, eventually consistent)')
for (const [label, options] of [
  ['a page of 100 (the default)', { limit: 100 }],
  ['a page of 1,000 (--limit 1000)', { limit: 1_000 }],
  ['100 keys of a 1% plan (--plan business)', { limit: 100, plan: 'business' }],
] as const) {
  resetTally()
  const { value: page, ms } = await timed(() => storeKeys.page(options))
  out(
    `  ${label.padEnd(44)} ${fmt(page.items.length)} keys in ${fmt(ms)} ms, ${fmt(tally.readUnits, 1)} read units, ${tally.calls.get('ScanCommand') ?? 0} Scan call(s)`,
  )
}
resetTally()
const everyPage = await timed(async () => {
  let count = 0
  for await (const items of storeKeys.all(1_000)) count += items.length
  return count
})
out(
  `  ${'every key, pages of 1,000 (the month export)'.padEnd(44)} ${fmt(everyPage.value)} keys in ${seconds(everyPage.ms)}, ${fmt(tally.readUnits)} read units ($${fmt((tally.readUnits / 1e6) * PRICE.readUnitPerMillion, 4)})`,
)

// --- The month export. ---
const usageRows = async (keyIds: string[]) => {
  for (let start = 0; start < keyIds.length; start += 25) {
    await documentClient.send(
      new BatchWriteCommand({
        RequestItems: {
          [tables.rateLimits]: keyIds.slice(start, start + 25).map((keyId) => ({
            PutRequest: {
              Item: {
                ...dayItemKey(keyId, '2026-11-03'),
                day: 12,
                m0720: 12,
                [RATE_LIMIT_TABLE.ttlAttribute]: 1_800_000_000,
              },
            },
          })),
        },
      }),
    )
  }
}
{
  const ids: string[] = []
  for await (const items of storeKeys.all(1_000)) ids.push(...items.map((item) => item.keyId))
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ids.length) {
        const start = next
        next += 1_000
        await usageRows(ids.slice(start, start + 1_000))
      }
    }),
  )
}
resetTally()
const usage = new KeyUsageRepository({ client: documentClient, tableName: tables.rateLimits })
const month = await timed(() => usage.month('2026-11'))
out()
out(
  'The month export (keys usage --month): one Scan of the rate-limit table, one day of use per key',
)
out(
  `  ${fmt(month.value.length)} rows in ${seconds(month.ms)}, ${fmt(tally.readUnits)} read units ($${fmt((tally.readUnits / 1e6) * PRICE.readUnitPerMillion, 4)}), ${tally.calls.get('ScanCommand') ?? 0} Scan calls; a month of daily use (30 items a key) reads 30 times as much`,
)

// --- The key sync with N store keys. ---
const syncAfter = await syncRun()
out()
out('The key sync (100 API Gateway keys on 4 plans; the store key table is never read)')
out(
  `  with 0 store keys: ${fmt(syncBefore.ms)} ms, ${syncBefore.calls} DynamoDB calls, ${fmt(syncBefore.readUnits, 1)} read units`,
)
out(
  `  with ${fmt(KEYS)} store keys: ${fmt(syncAfter.ms)} ms, ${syncAfter.calls} DynamoDB calls, ${fmt(syncAfter.readUnits, 1)} read units`,
)

// --- One store key's flood, on the local usage-plan emulation. ---
{
  let now = Date.UTC(2026, 10, 3, 12)
  const clock = () => now
  const caller = (keyId: string, usageKeyDigest: string) => ({
    allowed: true,
    principalId: keyId,
    context: { keyId, plan: 'free', perMinute: 60, perDay: 1_000 },
    usageKeyDigest,
  })
  const flood = (metering: 'unthrottled' | 'backstop') => {
    const plans = new UsagePlanThrottle({ clock })
    let victimRefused = 0
    let floodAdmitted = 0
    // One minute: the flooder at 10,000 requests a second, another store key once a second.
    for (let ms = 0; ms < 60_000; ms += 1) {
      now += 1
      for (let i = 0; i < 10; i += 1) {
        if (usagePlanVerdict(caller('s-flooder000', 'pool'), plans, () => metering) === 'admitted')
          floodAdmitted += 1
      }
      if (
        ms % 1_000 === 0 &&
        usagePlanVerdict(caller('s-quiet00000', 'pool'), plans, () => metering) !== 'admitted'
      )
        victimRefused += 1
    }
    return { victimRefused, floodAdmitted }
  }
  const pool = flood('unthrottled')
  const shared = flood('backstop')
  out()
  out(
    "One store key's flood (10,000 requests/s for a minute) and another store key (1 a second), local usage-plan emulation",
  )
  out(
    `  the pool plan (no throttle, no quota): the other key's gateway 429s ${pool.victimRefused} of 60; the flood reaches the functions (${fmt(pool.floodAdmitted)}), whose limiter refuses it (429 with headers) and the WAF's per-key rule bounds it on AWS`,
  )
  out(
    `  one bucket sized as a Free key's backstop instead: the other key's gateway 429s ${shared.victimRefused} of 60`,
  )
}

// --- The authorizer cache's hit rate. ---
{
  const ACTIVE = 20_000
  const RATE = 2_000
  const MINUTES = 30
  const weights = Array.from({ length: ACTIVE }, (_, rank) => 1 / (rank + 1))
  const total = weights.reduce((a, b) => a + b, 0)
  const cumulative: number[] = []
  let running = 0
  for (const weight of weights) {
    running += weight / total
    cumulative.push(running)
  }
  const pick = () => {
    const x = Math.random()
    let lo = 0
    let hi = ACTIVE - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((cumulative[mid] as number) < x) lo = mid + 1
      else hi = mid
    }
    return lo
  }
  out()
  out(
    `The authorizer cache: ${fmt(ACTIVE)} active store keys (Zipf-distributed), ${fmt(RATE)} requests/s for ${MINUTES} minutes`,
  )
  for (const ttlSeconds of [60, 300]) {
    let now = 0
    const cache = new AuthorizerCache({ ttlSeconds, clock: () => now })
    let invocations = 0
    let requests = 0
    for (let ms = 0; ms < MINUTES * 60_000; ms += 1_000 / RATE) {
      now = ms
      requests += 1
      await cache.answer(`Bearer key-${pick()}`, async () => {
        invocations += 1
        return 'denied'
      })
    }
    out(
      `  TTL ${String(ttlSeconds).padStart(3)} s: hit rate ${fmt((100 * (requests - invocations)) / requests, 1)}%, ${fmt(invocations / (MINUTES * 60), 1)} authorizer runs and key reads a second (of ${fmt(RATE)} requests)`,
    )
  }
}

out()
out(
  `load average at the end ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`,
)
client.destroy()
documentClient.destroy()
await embedded?.close()
