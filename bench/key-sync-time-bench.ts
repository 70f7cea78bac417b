/**
 * How long the key sync takes at AWS's ceilings, on a virtual clock (test/support/
 * key-sync-simulation.ts: the real handler, key source, pacer and repositories, 100–200 ms per
 * management call): for 4, 100, 300 and 1,000 stage plans and 10,000 keys, a full reconciliation
 * from an empty mirror (runs a minute apart), the longest run against the 60 s timeout, and the
 * time from a key's CloudTrail event to the key in force, with the sync idle and while a
 * scheduled run reads. CloudTrail's own delivery to EventBridge is not included.
 * Run: npm run bench:key-sync [-- plans...]
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { KEY_SYNC_CALL_RATE } from '#functions/key-sync/key-sync-dependencies.ts'
import { IN_MEMORY, startEmbeddedDynamo } from '#local/embedded-dynamo.ts'
import { createDocumentClient } from '#shared/data/dynamo-client.ts'
import {
  CALL_LATENCY_MS,
  SYNC_TIMEOUT_MS,
  simulateBacklog,
  simulateKeySyncAtScale,
} from '#test/support/key-sync-simulation.ts'

const KEYS = 10_000

const dynamo = await startEmbeddedDynamo(IN_MEMORY)
const config = {
  endpoint: dynamo.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
}
const client = new DynamoDBClient(config)
const documentClient = createDocumentClient(config)
const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`

const args = process.argv.slice(2).map(Number).filter(Number.isFinite)
console.log(
  `Key sync on a virtual clock: ${KEYS} keys, ${CALL_LATENCY_MS.min}-${CALL_LATENCY_MS.max} ms per management call, paced at ${KEY_SYNC_CALL_RATE.perSecond}/s (burst ${KEY_SYNC_CALL_RATE.burst}), scheduled runs a minute apart, timeout ${SYNC_TIMEOUT_MS / 1_000} s`,
)
console.log(
  ' plans    keys  runs  full reconciliation  longest run  change (idle)  change (mid-run)',
)
for (const plans of args.length > 0 ? args : [4, 100, 300, 1_000]) {
  const result = await simulateKeySyncAtScale({ client, documentClient }, plans, KEYS)
  if (result.leaseKept || result.mirrored !== KEYS) throw new Error(JSON.stringify(result))
  console.log(
    [
      String(plans).padStart(6),
      String(KEYS).padStart(7),
      String(result.runs).padStart(5),
      seconds(result.fullReconciliationMs).padStart(20),
      seconds(result.longestRunMs).padStart(12),
      seconds(result.changeIdleMs).padStart(14),
      seconds(result.changeMidRunMs).padStart(17),
    ].join(' '),
  )
}
// A script renamed 2,000 keys (2,000 ids pending), and a key disabled in the console a second
// later: when it is out of the mirror, and when nothing is pending any more.
const BACKLOG = 2_000
console.log(`\nBacklog: ${BACKLOG} ids pending, 3000 keys, a console disable a second later`)
console.log(' plans  disable in force  backlog gone')
for (const plans of args.length > 0 ? args : [4, 1_000]) {
  const result = await simulateBacklog({ client, documentClient }, plans, 3_000, BACKLOG)
  console.log(
    [
      String(plans).padStart(6),
      seconds(result.revocationMs).padStart(16),
      seconds(result.backlogGoneMs).padStart(13),
    ].join(' '),
  )
}
client.destroy()
documentClient.destroy()
await dynamo.close()
