import type { OperationId } from '#shared/config/routes-config.ts'
import type { RestRequest } from './api-gateway-events.ts'

const JSON_BODY = { 'Content-Type': 'application/json' }

/**
 * Requests that take each operation through every DynamoDB call its function can make (method
 * and resource come from its route): test/integration/route-table-access.test.ts runs them with
 * the function allowed only what its route's table access grants. An operation without an entry
 * here fails the type-check.
 */
export const OPERATION_REQUESTS: Record<OperationId, Omit<RestRequest, 'method' | 'resource'>[]> = {
  // A create reserves an id block (counter update) and puts the pet; the repeat under the same
  // Idempotency-Key is a replay, which reads the stored answer back.
  createPet: [
    {
      headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' },
      body: '{"name":"Rex","categoryId":1,"status":"available"}',
    },
    {
      headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' },
      body: '{"name":"Rex","categoryId":1,"status":"available"}',
    },
  ],
  getPet: [{ pathParameters: { petId: '1' } }],
  // Unfiltered: a scan; filtered: a query of the status index.
  listPets: [{ query: { limit: '5' } }, { query: { status: 'available' } }],
}
