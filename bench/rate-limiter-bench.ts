/**
 * Latency of one rate-limiter decision against in-memory dynalite (the local store), measured
 * over sequential calls: the admitted path (one UpdateItem) and the rejected path (failed
 * UpdateItem + GetItem + UpdateItem on dynalite; AWS returns the old item, saving the GetItem).
 * Run: npx tsx bench/rate-limiter-bench.ts [calls]
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { ensureTable, IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import { rateLimitTableDefinition } from '#shared/data/table-keys.ts'
import { DynamoRateLimiter, type RateLimitDecision } from '#shared/rate-limit/rate-limiter.ts'
import { percentile } from './bench-stats.ts'

const calls = Number(process.argv[2] ?? 1_000)
const WARM_UP = 50

const measure = async (
  label: string,
  n: number,
  call: () => Promise<RateLimitDecision>,
  expected: RateLimitDecision['outcome'],
) => {
  const samples: number[] = []
  for (let i = 0; i < n; i += 1) {
    const start = process.hrtime.bigint()
    const decision = await call()
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (decision.outcome !== expected) throw new Error(`${label}: got ${decision.outcome}`)
  }
  samples.sort((a, b) => a - b)
  const format = (ms: number) => `${ms.toFixed(2)} ms`
  console.log(
    `${label.padEnd(10)} n=${n}  median ${format(percentile(samples, 50))}  p99 ${format(percentile(samples, 99))}  max ${format(samples.at(-1) ?? Number.NaN)}`,
  )
}

const embedded = await startEmbeddedDynamo(IN_MEMORY)
const config = {
  endpoint: embedded.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
}
const admin = new DynamoDBClient(config)
const client = createDocumentClient(config)
try {
  await ensureTable(admin, rateLimitTableDefinition('bench-rate-limits'))
  // A fixed instant, so the whole run stays in one minute window.
  const nowMs = Date.parse('2026-03-14T10:00:00Z')
  const limiter = new DynamoRateLimiter({
    client,
    tableName: 'bench-rate-limits',
    clock: () => nowMs,
  })
  const roomy = { perMinute: 1_000_000, perDay: 10_000_000 }
  await measure('warm-up', WARM_UP, () => limiter.consume('warm-up', roomy), 'admitted')
  await measure('admitted', calls, () => limiter.consume('bench-admitted', roomy), 'admitted')
  // Fill a minute, then measure refusals (fewer than perMinute, so no suspension starts).
  const full = { perMinute: calls, perDay: 10 * calls }
  for (let i = 0; i < calls; i += 1) await limiter.consume('bench-rejected', full)
  await measure('rejected', calls, () => limiter.consume('bench-rejected', full), 'rate_limited')
} finally {
  admin.destroy()
  client.destroy()
  await embedded.close()
}
