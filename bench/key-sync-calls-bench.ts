/**
 * API Gateway management calls made by one key-sync run, and per minute (the schedule runs it
 * once a minute), against the account-wide quota of 10 requests/s, for N usage plans of the stage
 * and M API keys in the account. The real ApiGatewayKeySource runs against an in-memory API
 * Gateway (pages of 500, as the source asks) and its calls are counted, then checked against
 *   calls = ceil(allPlans / 500) + Σ over stage plans of max(1, ceil(planKeys / 500)) + ceil(M / 500)
 * Run: npx tsx bench/key-sync-calls-bench.ts [plans keys [otherPlans]]
 */

import { KEY_SYNC_CALL_RATE } from '#functions/key-sync/key-sync-dependencies.ts'
import { ApiGatewayKeySource } from '#keys/api-gateway-key-source.ts'
import { PAGE_SIZE } from '#keys/management-listing.ts'
import {
  FAKE_API_ID,
  FAKE_STAGE,
  FakeApiGateway,
  planTags,
} from '#test/support/fake-api-gateway.ts'

const QUOTA_RPS = 10
const RUNS_PER_MINUTE = 1

interface Scenario {
  plans: number
  keys: number
  /** Plans of other APIs or stages: listed by GetUsagePlans, their keys never read. */
  otherPlans: number
}

const pages = (items: number) => Math.max(1, Math.ceil(items / PAGE_SIZE))

const expectedCalls = ({ plans, keys, otherPlans }: Scenario): number => {
  let planKeyPages = 0
  for (let p = 0; p < plans; p += 1) {
    planKeyPages += pages(Math.floor(keys / plans) + (p < keys % plans ? 1 : 0))
  }
  return pages(plans + otherPlans) + planKeyPages + pages(keys)
}

const measure = async (scenario: Scenario) => {
  const gateway = new FakeApiGateway()
  for (let p = 0; p < scenario.plans; p += 1)
    gateway.addPlan(`plan-${p}`, { tags: planTags('pro') })
  for (let p = 0; p < scenario.otherPlans; p += 1) {
    gateway.addPlan(`other-${p}`, { tags: planTags('pro'), stage: 'staging' })
  }
  for (let k = 0; k < scenario.keys; k += 1)
    gateway.addKey(`key-${k}`, `plan-${k % scenario.plans}`)
  const source = new ApiGatewayKeySource({
    client: gateway.client,
    restApiId: FAKE_API_ID,
    stage: FAKE_STAGE,
  })
  const snapshot = await source.read()
  const calls = gateway.totalCalls()
  if (calls !== expectedCalls(scenario) || calls !== snapshot.managementCalls) {
    throw new Error(`Counted ${calls} calls, expected ${expectedCalls(scenario)}`)
  }
  if (snapshot.entries.length !== scenario.keys) throw new Error('Not every key was mirrored')
  const perMinute = calls * RUNS_PER_MINUTE
  const rps = perMinute / 60
  // The pacer lets `burst` calls go at once, then `perSecond`: the shortest a run can take.
  const pacedSeconds = Math.max(0, calls - KEY_SYNC_CALL_RATE.burst) / KEY_SYNC_CALL_RATE.perSecond
  console.log(
    [
      String(scenario.plans).padStart(6),
      String(scenario.otherPlans).padStart(7),
      String(scenario.keys).padStart(7),
      String(calls).padStart(10),
      String(perMinute).padStart(9),
      rps.toFixed(3).padStart(8),
      `${((100 * rps) / QUOTA_RPS).toFixed(2)} %`.padStart(9),
      `${pacedSeconds.toFixed(1)} s`.padStart(10),
    ].join(' '),
  )
}

const [plansArg, keysArg, otherArg] = process.argv.slice(2).map(Number)
const scenarios: Scenario[] =
  plansArg && keysArg !== undefined
    ? [{ plans: plansArg, keys: keysArg, otherPlans: otherArg ?? 0 }]
    : [
        { plans: 4, keys: 4, otherPlans: 0 },
        { plans: 4, keys: 400, otherPlans: 4 },
        { plans: 4, keys: 2_000, otherPlans: 4 },
        { plans: 20, keys: 5_000, otherPlans: 20 },
        { plans: 100, keys: 10_000, otherPlans: 100 },
        { plans: 300, keys: 30_000, otherPlans: 300 },
      ]

console.log(
  `Management API calls of one key sync (pages of ${PAGE_SIZE}; ${RUNS_PER_MINUTE} scheduled run a minute; quota ${QUOTA_RPS} req/s, burst 40)`,
)
console.log(' plans  others    keys  calls/run  calls/min    req/s  of quota  min. paced')
for (const scenario of scenarios) await measure(scenario)
