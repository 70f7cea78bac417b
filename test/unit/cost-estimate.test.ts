import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  COST_TABLE_END,
  COST_TABLE_START,
  type CostInput,
  costSection,
  costTableOperations,
} from '#bench/cost-estimate.ts'
import { ROUTES } from '#shared/config/routes-config.ts'

/**
 * The cost table of docs/performance.md is written by the bench from its counts (`npm run bench`
 * rewrites it; its short mode fails until the rewrite is committed). The bench is not part of
 * npm test, so this checks, without running it, that the table has a row for every function: a
 * new operation whose row was never written (or never committed) fails here, naming the command.
 */
const page = readFileSync(new URL('../../docs/performance.md', import.meta.url), 'utf8')

const input = (operation: CostInput['operation']): CostInput => ({
  operation,
  memoryMb: 512,
  readUnits: 1,
  writeUnits: 1,
  calls: 2,
  roundTrips: 1,
  logBytes: 1000,
})

describe('the cost table', () => {
  it('reads back the rows the bench writes, the authorizer included', () => {
    const lines = costSection([input('listPets'), input('getPet'), input('authorizer')])
    expect(
      costTableOperations(`before\n${COST_TABLE_START}\n${lines.join('\n')}\n${COST_TABLE_END}\n`),
    ).toEqual(['listPets', 'getPet', 'authorizer'])
    expect(costTableOperations(lines.join('\n'))).toEqual([])
  })

  it('of docs/performance.md has a row for every operation of the route table and the authorizer, and no other', () => {
    const rows = costTableOperations(page)
    const wanted = [...ROUTES.map((route) => route.operationId), 'authorizer']
    expect([
      ...wanted
        .filter((operation) => !rows.includes(operation))
        .map(
          (operation) =>
            `docs/performance.md's cost table has no row for ${operation}: run \`npm run bench -- --short\` (a few minutes; it writes the row from the bench's counts) and commit docs/performance.md`,
        ),
      ...rows
        .filter((operation) => !wanted.includes(operation))
        .map(
          (operation) =>
            `docs/performance.md's cost table has a row for ${operation}, which the route table lacks: run \`npm run bench -- --short\` and commit docs/performance.md`,
        ),
    ]).toEqual([])
  })
})
