import { describe, expect, it } from 'vitest'
import { budgetProblems, type MeasuredFacts } from '#bench/bench-budgets.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { ROUTES } from '#shared/config/routes-config.ts'

/**
 * The bench's counts are checked as measured, never rounded: a retry the SDK made on a busy
 * machine (one in 500 invocations: 1.002 GetItem per request) fails the bench instead of
 * passing as 1.00.
 */
const authorizer: MeasuredFacts = {
  initInstructionsRatio: undefined,
  bundleBytes: 1,
  bundledModules: 1,
  builtinModules: 1,
  callsPerRequest: { GetItem: 1 },
  roundTripsPerRequest: 1,
}

describe("the bench's call counts", () => {
  it('pass when they are what the budget says', () => {
    expect(budgetProblems('authorizer', authorizer)).toEqual([])
  })

  it('fail on a fraction the design does not make, however small', () => {
    expect(
      budgetProblems('authorizer', {
        ...authorizer,
        callsPerRequest: { GetItem: 501 / 500 },
        roundTripsPerRequest: 501 / 500,
      }),
    ).toEqual([
      'authorizer: GetItem calls per request 1.002, budget says 1',
      'authorizer: DynamoDB round trips per request 1.002, budget says 1',
    ])
  })

  it("keep createPet's one id block per 50 creates (whole hundredths)", () => {
    const problems = budgetProblems('createPet', {
      ...authorizer,
      callsPerRequest: { UpdateItem: 510 / 500, PutItem: 1 },
      roundTripsPerRequest: 1010 / 500,
    })
    expect(problems.filter((problem) => /calls|round trips/.test(problem))).toEqual([])
  })
})

describe("the operations' budgets", () => {
  // A budget is measured, never inherited: an operation's figures equal to another's, every one,
  // are a budget copied from it and never replaced by what the bench printed for this one (its
  // SHARED_GROWTH allowance hides a copy a little under the real figures).
  it('has no two operations with the same budget, figure for figure', () => {
    const budgets = ROUTES.map(
      (route) => [route.operationId, OPERATION_FIXTURES[route.operationId].bench.budget] as const,
    )
    const copies = budgets.flatMap(([operationId, budget], index) =>
      budgets
        .slice(0, index)
        .filter(([, earlier]) => JSON.stringify(earlier) === JSON.stringify(budget))
        .map(
          ([earlierId]) =>
            `${operationId}'s bench.budget is ${earlierId}'s, figure for figure: a copy never measured. Run \`npm run bench -- --short\` and write the figures it prints for ${operationId} (bundle bytes rounded up to the next 1,000, its modules and built-ins, the init instructions ratio) into bench.budget of its fixtures`,
        ),
    )
    expect(copies).toEqual([])
  })
})
