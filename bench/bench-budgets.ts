import type { Operation } from './support/bench-subjects.ts'

/**
 * The bench's deterministic figures, recorded: what `npm run bench` (and its short mode in
 * `.ci/run`) fails on when a change moves them. Timings are never budgets here: they depend on
 * the machine and its load, so the bench prints them with their ratios and asserts nothing.
 *
 * A budget is raised (or lowered) in the same commit as the change that moves it, with the reason
 * in the commit message; the bench prints the measured figures to copy from.
 */
export interface FunctionBudget {
  /** index.mjs, bytes: at most this. */
  bundleBytes: number
  /** Input modules esbuild put in the bundle: at most this. */
  bundledModules: number
  /** Node built-in modules loaded by the end of the first invocation: at most this. */
  builtinModules: number
  /** DynamoDB calls per request, by operation: exactly these (to two decimals). */
  callsPerRequest: Record<string, number>
  /** DynamoDB round trips a request waits for: exactly this (to two decimals). */
  roundTripsPerRequest: number
  /**
   * Instructions from process start to the end of the first invocation (minus a bare node start),
   * counted by valgrind, as a ratio to the floor plus the limiter write (the authorizer: its
   * floor): at most this. A count, not a time: it varies by about 0.1% between runs.
   */
  initInstructionsRatio: number
}

export const BUDGETS: Record<Operation, FunctionBudget> = {
  listPets: {
    bundleBytes: 424_000,
    bundledModules: 602,
    builtinModules: 179,
    callsPerRequest: { UpdateItem: 1, Query: 1 },
    roundTripsPerRequest: 1,
    initInstructionsRatio: 1.25,
  },
  createPet: {
    bundleBytes: 429_000,
    bundledModules: 606,
    builtinModules: 179,
    callsPerRequest: { UpdateItem: 1.02, PutItem: 1 },
    roundTripsPerRequest: 2.02,
    initInstructionsRatio: 1.3,
  },
  getPet: {
    bundleBytes: 417_000,
    bundledModules: 602,
    builtinModules: 179,
    callsPerRequest: { UpdateItem: 1, GetItem: 1 },
    roundTripsPerRequest: 1,
    initInstructionsRatio: 1.23,
  },
  authorizer: {
    bundleBytes: 408_000,
    bundledModules: 582,
    builtinModules: 179,
    callsPerRequest: { GetItem: 1 },
    roundTripsPerRequest: 1,
    initInstructionsRatio: 1.24,
  },
}

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

/** Every way the measured figures break the function's budget, as sentences. */
export const budgetProblems = (operation: Operation, measured: MeasuredFacts): string[] => {
  const budget = BUDGETS[operation]
  const problems: string[] = []
  const atMost = (name: keyof FunctionBudget, value: number, limit: number) => {
    if (value > limit) problems.push(`${operation}: ${name} ${value} is over its budget ${limit}`)
  }
  atMost('bundleBytes', measured.bundleBytes, budget.bundleBytes)
  atMost('bundledModules', measured.bundledModules, budget.bundledModules)
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
    const actual = round2(measured.callsPerRequest[name] ?? 0)
    if (actual !== expected) {
      problems.push(`${operation}: ${name} calls per request ${actual}, budget says ${expected}`)
    }
  }
  const trips = round2(measured.roundTripsPerRequest)
  if (trips !== budget.roundTripsPerRequest) {
    problems.push(
      `${operation}: DynamoDB round trips per request ${trips}, budget says ${budget.roundTripsPerRequest}`,
    )
  }
  return problems
}
