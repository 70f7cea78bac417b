import type { COMMON_ERROR_STATUSES, OperationId, Route } from '#shared/config/routes-config.ts'
import type { RestRequest } from './api-gateway-events.ts'

const JSON_BODY = { 'Content-Type': 'application/json' }

/** A request as the route's Lambda gets it; method and resource come from its route. */
export type SampleRequest = Omit<RestRequest, 'method' | 'resource'>

/**
 * One outcome: requests whose last one gets the outcome's status (those before it set the scene),
 * or, for an outcome no single invocation can give, where it is tested instead.
 */
export type SampleOutcome = { requests: readonly SampleRequest[] } | { testedIn: string }

/** Every status the route declares beyond the common ones, its success included, is a key. */
type OutcomesOf<R extends Route> = Record<R['successStatus'] | R['errors'][number], SampleOutcome> &
  Partial<Record<(typeof COMMON_ERROR_STATUSES)[number], SampleOutcome>>

export type OperationOutcomes = { [R in Route as R['operationId']]: OutcomesOf<R> }

/**
 * Requests that take each operation to every outcome its route declares, and so through every
 * DynamoDB call its function can make: test/integration/route-table-access.test.ts runs them in
 * route-table order with the function allowed only what its route's table access grants, and
 * checks each answer's status. An operation without an entry, or a declared status without an
 * outcome, fails the type-check. An unknown id is an outcome of its own: an update or delete of
 * one must answer 404, never create the pet (an upsert).
 */
export const OPERATION_OUTCOMES: OperationOutcomes = {
  createPet: {
    // A create reserves an id block (counter update), claims its Idempotency-Key and puts the
    // pet; the repeat under the same key is a replay, which reads the stored answer back.
    201: {
      requests: [
        {
          headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' },
          body: '{"name":"Rex","categoryId":1,"status":"available"}',
        },
        {
          headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' },
          body: '{"name":"Rex","categoryId":1,"status":"available"}',
        },
      ],
    },
    400: { requests: [{ headers: JSON_BODY, body: '{"name":"","categoryId":1}' }] },
    409: { testedIn: 'test/integration/idempotent-create.test.ts (a second attempt in flight)' },
    413: { requests: [{ headers: JSON_BODY, body: `{"name":"${'a'.repeat(17_000)}"}` }] },
    415: { requests: [{ headers: { 'Content-Type': 'text/plain' }, body: '{"name":"Rex"}' }] },
    // The key of the 201 with another body: the stored request is read back and compared.
    422: {
      requests: [
        {
          headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' },
          body: '{"name":"Max","categoryId":1,"status":"available"}',
        },
      ],
    },
  },
  getPet: {
    // The pet createPet's 201 made.
    200: { requests: [{ pathParameters: { petId: '1' } }] },
    404: { requests: [{ pathParameters: { petId: '987654321' } }] },
    410: { testedIn: 'test/unit/deprecation-middleware.test.ts (a clock past the sunset)' },
  },
  listPets: {
    // Unfiltered: a scan; filtered: a query of the status index.
    200: { requests: [{ query: { limit: '5' } }, { query: { status: 'available' } }] },
    400: { requests: [{ query: { limit: '0' } }] },
  },
}

/** An operation's outcomes in the order to send them: success first, then by status. */
export const outcomesOf = (operationId: OperationId): [number, SampleOutcome][] =>
  (Object.entries(OPERATION_OUTCOMES[operationId]) as [string, SampleOutcome][])
    .map(([status, outcome]): [number, SampleOutcome] => [Number(status), outcome])
    .sort(([a], [b]) => (a < 300 ? -1 : b < 300 ? 1 : a - b))
