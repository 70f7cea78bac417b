import type { SampleOutcome } from '#functions/operation-fixture-types.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import type { OperationId } from '#shared/config/routes-config.ts'

/**
 * Requests that take each operation to every outcome its route declares, and so through every
 * DynamoDB call its function can make, as its folder declares them (`outcomes` of
 * `functions/<fn>/<fn>-fixtures.ts`): test/integration/route-table-access.test.ts runs them in
 * route-table order with the function allowed only what its route's table access grants, and
 * checks each answer's status. A declared status without an outcome fails the type-check at the
 * declaration. An unknown id is an outcome of its own: an update or delete of one must answer
 * 404, never create the pet (an upsert).
 */

/** An operation's outcomes in the order to send them: success first, then by status. */
export const outcomesOf = (operationId: OperationId): [number, SampleOutcome][] =>
  (Object.entries(OPERATION_FIXTURES[operationId].outcomes) as [string, SampleOutcome][])
    .map(([status, outcome]): [number, SampleOutcome] => [Number(status), outcome])
    .sort(([a], [b]) => (a < 300 ? -1 : b < 300 ? 1 : a - b))
