import fc from 'fast-check'
import type { FuzzCase, HostileRequest, OperationFuzz } from '#functions/operation-fixture-types.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import {
  errorStatusesOf,
  type OperationId,
  ROUTES,
  type RouteDefinition,
} from '#shared/config/routes-config.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'
import { headerText, INT64_EDGES, oddText, pathSegment, petBody } from './hostile-requests.ts'

export type { FuzzCase }

/**
 * Each operation's own hostile input (test/e2e/hostile-input.test.ts), as its folder declares it
 * (`fuzz` of `functions/<fn>/<fn>-fixtures.ts`): requests it must accept and requests it must
 * refuse, so that every status its route declares is reached in every run and none it does not
 * declare is ever answered.
 */

/** The hostile-input run's building blocks, handed to every operation's fixtures. */
const HOSTILE = { int64Edges: INT64_EDGES, oddText, petBody, pathSegment }

/** An operation's generators, for the run's key and the pets made for that operation alone. */
export const operationFuzzOf = (
  operationId: OperationId,
  { key, petIds }: { key: string; petIds: readonly string[] },
): OperationFuzz => OPERATION_FIXTURES[operationId].fuzz({ fc, key, petIds, hostile: HOSTILE })

/** The first request's Authorization replaced (or dropped) on every request of a case. */
const withAuthorization = (fuzzCase: FuzzCase, authorization: string | undefined): FuzzCase => ({
  ...fuzzCase,
  requests: fuzzCase.requests.map(({ headers: { Authorization: _, ...headers }, ...request }) => ({
    ...request,
    headers: authorization === undefined ? headers : { ...headers, Authorization: authorization },
  })),
})

const mapBodies = (fuzzCase: FuzzCase, change: (request: HostileRequest) => HostileRequest) => ({
  ...fuzzCase,
  requests: fuzzCase.requests.map((request) =>
    request.body === undefined ? request : change(request),
  ),
})

/**
 * Every kind of an operation's requests: its own, and those derived from its well-formed ones:
 * no or a wrong key (401), a key over its limits (429, `spentKey`), and, when they carry a JSON
 * body, another media type (415) and a body over the 16 KiB limit (413).
 */
export const fuzzKindsOf = (
  fuzz: OperationFuzz,
  { key, spentKey }: { key: string; spentKey: string },
): Record<string, fc.Arbitrary<FuzzCase>> => {
  const { wellFormed, malformed } = fuzz
  const kinds: Record<string, fc.Arbitrary<FuzzCase>> = {
    wellFormed,
    ...malformed,
    wrongKey: fc
      .tuple(
        wellFormed,
        fc.constantFrom(
          undefined,
          '',
          'Bearer',
          `Basic ${key}`,
          `Bearer ${key}x`,
          `Bearer ${spentKey.slice(1)}`,
        ),
        headerText,
      )
      .map(([fuzzCase, authorization, noise]) =>
        withAuthorization(fuzzCase, authorization === '' ? noise : authorization),
      ),
    spentKey: wellFormed.map((fuzzCase) => withAuthorization(fuzzCase, `Bearer ${spentKey}`)),
  }
  const [sample] = fc.sample(wellFormed, { numRuns: 1, seed: 1 })
  if (sample?.requests.some((request) => request.body !== undefined)) {
    kinds.otherMediaType = fc
      .tuple(
        wellFormed,
        fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml'),
      )
      .map(([fuzzCase, type]) =>
        mapBodies(fuzzCase, (request) => ({
          ...request,
          headers: { ...request.headers, 'Content-Type': type },
        })),
      )
    kinds.overLimit = fc
      .tuple(wellFormed, fc.integer({ min: MAX_BODY_BYTES + 1, max: 4 * MAX_BODY_BYTES }))
      .map(([fuzzCase, size]) =>
        mapBodies(fuzzCase, (request) => ({
          ...request,
          body: `{"padding":"${'p'.repeat(size)}",${(request.body as string).slice(1)}`,
        })),
      )
  }
  return kinds
}

/** Every status the route declares: its success and error statuses, the common ones included. */
export const declaredStatusesOf = (route: RouteDefinition): number[] => [
  route.successStatus,
  ...errorStatusesOf(route),
]

/**
 * The declared statuses a healthy server answers before any sunset, which every run must reach:
 * 500 and 503 need a failing datastore (test/integration/datastore-faults.test.ts) and 410 a
 * clock past the sunset (test/unit/deprecation-middleware.test.ts).
 */
export const reachableStatusesOf = (route: RouteDefinition): number[] =>
  declaredStatusesOf(route).filter(
    (status) => status < 500 && !(status === 410 && route.deprecation !== undefined),
  )

/** The route a request is sent to by method and path (its query aside), if any. */
export const routeForRequest = (request: HostileRequest): RouteDefinition | undefined => {
  const path = request.path.split('?')[0] ?? ''
  return ROUTES.find(
    (route) =>
      route.method === request.method &&
      new RegExp(`^${route.path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
  )
}
