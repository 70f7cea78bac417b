import { readFileSync, writeFileSync } from 'node:fs'
import type { Operation } from './support/bench-subjects.ts'

/**
 * The cost estimate in docs/performance.md, made from the bench's counts (DynamoDB calls, request
 * units and round trips per request, log bytes per request, the template's memory) and the one
 * price table below. `npm run bench` rewrites the section; its short mode (`.ci/run`) fails when
 * the page no longer says what the code and these prices make.
 */

/** us-east-1 list prices, USD (the first pricing tier, Standard classes). */
export const PRICES = {
  /** REST API calls, per million, first 333 million a month: https://aws.amazon.com/api-gateway/pricing/ */
  apiGatewayRestPerMillion: 3.5,
  /** Lambda requests, per million: https://aws.amazon.com/lambda/pricing/ */
  lambdaRequestsPerMillion: 0.2,
  /** Lambda duration, arm64, per GB-second, first 7.5 billion a month: https://aws.amazon.com/lambda/pricing/ */
  lambdaArmGbSecond: 0.0000133334,
  /** DynamoDB on-demand, per million write request units: https://aws.amazon.com/dynamodb/pricing/on-demand/ */
  dynamoWriteUnitsPerMillion: 0.625,
  /** DynamoDB on-demand, per million read request units: https://aws.amazon.com/dynamodb/pricing/on-demand/ */
  dynamoReadUnitsPerMillion: 0.125,
  /** CloudWatch Logs ingestion (Standard), per GB: https://aws.amazon.com/cloudwatch/pricing/ */
  logsIngestionPerGb: 0.5,
} as const

/** What the bench cannot count, said once. */
export const ASSUMPTIONS = {
  /** One DynamoDB round trip in the same region ("single-digit milliseconds"). */
  dynamoRoundTripMs: 5,
  /**
   * A handler's own CPU per invocation on one full vCPU (the bench's warm medians are 0.2-0.8 ms
   * on this machine's cores, rounded up); Lambda gives a function CPU in proportion to its memory,
   * one vCPU at 1,769 MB (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
   */
  handlerCpuMsPerVcpu: 1,
  vcpuMemoryMb: 1769,
  /** Lambda's START, END and REPORT lines and the X-Ray line of an actively traced function. */
  lambdaPlatformLogBytes: 350,
  /** The stage's access log line (rest-api-construct.ts's format with typical values). */
  accessLogBytes: 600,
  /** Production's authorizer cache: a key sending all day runs the authorizer about every 300 s. */
  authorizerCacheSeconds: 300,
} as const

/** Per request, as the bench counted it. */
export interface CostInput {
  operation: Operation
  memoryMb: number
  readUnits: number
  writeUnits: number
  calls: number
  roundTrips: number
  logBytes: number
}

const GB = 1024 ** 3

const billedMs = (input: CostInput) =>
  Math.ceil(
    input.roundTrips * ASSUMPTIONS.dynamoRoundTripMs +
      (ASSUMPTIONS.handlerCpuMsPerVcpu * ASSUMPTIONS.vcpuMemoryMb) / input.memoryMb,
  )

/** Dollars per million invocations of one function, by line. */
const perMillion = (input: CostInput, withGateway: boolean) => {
  const lambdaRequests = PRICES.lambdaRequestsPerMillion
  const lambdaDuration =
    (input.memoryMb / 1024) * (billedMs(input) / 1000) * PRICES.lambdaArmGbSecond * 1e6
  const dynamo =
    input.readUnits * PRICES.dynamoReadUnitsPerMillion +
    input.writeUnits * PRICES.dynamoWriteUnitsPerMillion
  const logBytes =
    input.logBytes +
    ASSUMPTIONS.lambdaPlatformLogBytes +
    (withGateway ? ASSUMPTIONS.accessLogBytes : 0)
  const logs = ((logBytes * 1e6) / GB) * PRICES.logsIngestionPerGb
  const gateway = withGateway ? PRICES.apiGatewayRestPerMillion : 0
  return {
    gateway,
    lambdaRequests,
    lambdaDuration,
    dynamo,
    logBytes,
    logs,
    total: gateway + lambdaRequests + lambdaDuration + dynamo + logs,
  }
}

const usd = (value: number) => `$${value.toFixed(value < 0.1 ? 3 : 2)}`
const units = (value: number) => Number(value.toFixed(2)).toString()

/** The section's markdown: one row per operation, then the authorizer's runs. */
export const costSection = (inputs: CostInput[]): string[] => {
  const lines = [
    '| per million requests | API Gateway REST | Lambda requests | Lambda duration | DynamoDB on-demand | CloudWatch Logs | total |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const input of inputs.filter((candidate) => candidate.operation !== 'authorizer')) {
    const cost = perMillion(input, true)
    lines.push(
      `| ${input.operation} | ${usd(cost.gateway)} | ${usd(cost.lambdaRequests)} | ${usd(cost.lambdaDuration)} (${billedMs(input)} ms at ${input.memoryMb} MB) | ${usd(cost.dynamo)} (${units(input.readUnits)} RRU + ${units(input.writeUnits)} WRU, calls ${units(input.calls)}) | ${usd(cost.logs)} (${cost.logBytes} B) | ${usd(cost.total)} |`,
    )
  }
  const authorizer = inputs.find((candidate) => candidate.operation === 'authorizer')
  if (authorizer) {
    const cost = perMillion(authorizer, false)
    const runsPerKeyDay = 86_400 / ASSUMPTIONS.authorizerCacheSeconds
    lines.push(
      '',
      `The authorizer runs only when API Gateway's cache misses (production caches ${ASSUMPTIONS.authorizerCacheSeconds} s: a key sending all day runs it about ${runsPerKeyDay} times a day). Per million runs:`,
      '',
      '| per million authorizer runs | Lambda requests | Lambda duration | DynamoDB on-demand | CloudWatch Logs | total |',
      '|---|---|---|---|---|---|',
      `| authorizer | ${usd(cost.lambdaRequests)} | ${usd(cost.lambdaDuration)} (${billedMs(authorizer)} ms at ${authorizer.memoryMb} MB) | ${usd(cost.dynamo)} (${units(authorizer.readUnits)} RRU, calls ${units(authorizer.calls)}) | ${usd(cost.logs)} (${cost.logBytes} B) | ${usd(cost.total)} |`,
    )
  }
  return lines
}

export const COST_TABLE_START =
  '<!-- cost-table:start (written by npm run bench from bench/cost-estimate.ts) -->'
export const COST_TABLE_END = '<!-- cost-table:end -->'

/**
 * The operations the page's cost table has a row for (the authorizer's included), as
 * `costSection` writes them: npm test checks every route has one without running the bench.
 */
export const costTableOperations = (page: string): string[] => {
  const start = page.indexOf(COST_TABLE_START)
  const end = page.indexOf(COST_TABLE_END)
  if (start < 0 || end < start) return []
  return [...page.slice(start, end).matchAll(/^\| ([A-Za-z]+) \| \$/gm)].map(
    (match) => match[1] as string,
  )
}

/** Writes the section into the page between its markers, unless it is already there. */
export const syncCostSection = (file: string, lines: string[]): 'unchanged' | 'written' => {
  const page = readFileSync(file, 'utf8')
  const start = page.indexOf(COST_TABLE_START)
  const end = page.indexOf(COST_TABLE_END)
  if (start < 0 || end < start) throw new Error(`${file} has no cost-table markers`)
  const next = `${page.slice(0, start)}${COST_TABLE_START}\n${lines.join('\n')}\n${page.slice(end)}`
  if (next === page) return 'unchanged'
  writeFileSync(file, next)
  return 'written'
}
