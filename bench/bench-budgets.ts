import type { FunctionBudget } from '#functions/operation-fixture-types.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import type { Operation } from './support/bench-subjects.ts'

/**
 * The bench's deterministic figures, recorded: what `npm run bench` (and its short mode in
 * `.ci/run`) fails on when a change moves them. Timings are never budgets here: they depend on
 * the machine and its load, so the bench prints them with their ratios and asserts nothing.
 *
 * A budget is raised (or lowered) in the same commit as the change that moves it, with the reason
 * in the commit message; the bench prints the measured figures to copy from.
 *
 * Counts, bytes and modules repeat exactly. The init-instructions ratio does not quite: valgrind
 * counts one run of each bundle and of its floor, and both move a little from run to run (the
 * authorizer's floor read 239 M to 251 M on the same code, its ratio 1.20 to 1.26 over six runs),
 * so a ratio's budget sits about 0.03 above the highest reading, not at the last one.
 */

/** Each route's budget as its folder declares it (`bench.budget`), the authorizer's here. */
const AUTHORIZER_BUDGET: FunctionBudget = {
  bundleBytes: 408_000,
  bundledModules: 582,
  builtinModules: 179,
  callsPerRequest: { GetItem: 1 },
  roundTripsPerRequest: 1,
  initInstructionsRatio: 1.28,
}

/**
 * What shared code may add to every function before the budgets it did not touch are edited: a
 * new operation's method on the shared pet repository (its DynamoDB command: 2 modules and about
 * 1 KB in each pet bundle) stays inside it, so adding an operation edits no other operation's
 * folder. A package, a second SDK client or an ES module import of `node:http` (undici: 13
 * built-ins, whose budget has no such allowance) adds far more and still fails, naming the figure.
 */
const SHARED_GROWTH = { bundleBytes: 4_096, bundledModules: 4 } as const

const budgetOf = (operation: Operation): FunctionBudget =>
  operation === 'authorizer' ? AUTHORIZER_BUDGET : OPERATION_FIXTURES[operation].bench.budget

export interface MeasuredFacts {
  /** undefined when instructions were not counted (no valgrind, or BENCH_INSTRUCTIONS=0). */
  initInstructionsRatio: number | undefined
  bundleBytes: number
  bundledModules: number
  builtinModules: number
  callsPerRequest: Record<string, number>
  roundTripsPerRequest: number
}

const round2 = (value: number) => Math.round(value * 100) / 100

/**
 * A count per request as measured, exact: calls over a multiple of 50 invocations are whole
 * hundredths by design (createPet's id block: one UpdateItem per 50), so anything else (1.002
 * GetItem: one retry in 500) is a call the budget does not know, never rounded away.
 */
const exactCount = (value: number): number | string =>
  Math.abs(value - round2(value)) < 1e-9 ? round2(value) : String(value)

/** Every way the measured figures break the function's budget, as sentences. */
export const budgetProblems = (operation: Operation, measured: MeasuredFacts): string[] => {
  const budget = budgetOf(operation)
  const problems: string[] = []
  const atMost = (name: keyof FunctionBudget, value: number, limit: number, allowance = 0) => {
    if (value > limit + allowance) {
      const growth = allowance > 0 ? ` and the ${allowance} shared code may add` : ''
      problems.push(`${operation}: ${name} ${value} is over its budget ${limit}${growth}`)
    }
  }
  atMost('bundleBytes', measured.bundleBytes, budget.bundleBytes, SHARED_GROWTH.bundleBytes)
  atMost(
    'bundledModules',
    measured.bundledModules,
    budget.bundledModules,
    SHARED_GROWTH.bundledModules,
  )
  atMost('builtinModules', measured.builtinModules, budget.builtinModules)
  if (measured.initInstructionsRatio !== undefined) {
    const ratio = round2(measured.initInstructionsRatio)
    atMost('initInstructionsRatio', ratio, budget.initInstructionsRatio)
  }
  const names = new Set([
    ...Object.keys(budget.callsPerRequest),
    ...Object.keys(measured.callsPerRequest),
  ])
  for (const name of names) {
    const expected = budget.callsPerRequest[name] ?? 0
    const actual = exactCount(measured.callsPerRequest[name] ?? 0)
    if (actual !== expected) {
      problems.push(`${operation}: ${name} calls per request ${actual}, budget says ${expected}`)
    }
  }
  const trips = exactCount(measured.roundTripsPerRequest)
  if (trips !== budget.roundTripsPerRequest) {
    problems.push(
      `${operation}: DynamoDB round trips per request ${trips}, budget says ${budget.roundTripsPerRequest}`,
    )
  }
  return problems
}

/**
 * Functions that serve no request (the automatic block runs a few times a minute, and per
 * delivery of the access log under a flood): only what their bundles weigh is budgeted, as
 * deployed (the production stage's assets).
 */
export const BACKGROUND_BUDGETS: Record<
  string,
  Pick<FunctionBudget, 'bundleBytes' | 'bundledModules'>
> = {
  'address-block': { bundleBytes: 410_000, bundledModules: 590 },
}

/** Every way a background function's bundle breaks its budget, as sentences. */
export const backgroundBudgetProblems = (
  service: string,
  measured: Pick<MeasuredFacts, 'bundleBytes' | 'bundledModules'>,
): string[] => {
  const budget = BACKGROUND_BUDGETS[service]
  if (!budget) return [`${service}: no budget in BACKGROUND_BUDGETS`]
  return [
    ...(measured.bundleBytes > budget.bundleBytes
      ? [`${service}: bundleBytes ${measured.bundleBytes} is over its budget ${budget.bundleBytes}`]
      : []),
    ...(measured.bundledModules > budget.bundledModules
      ? [
          `${service}: bundledModules ${measured.bundledModules} is over its budget ${budget.bundledModules}`,
        ]
      : []),
  ]
}
