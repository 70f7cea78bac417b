import fc from 'fast-check'
import {
  errorStatusesOf,
  type OperationId,
  ROUTES,
  type RouteDefinition,
} from '#shared/config/routes-config.ts'
import { MAX_BODY_BYTES } from '#shared/middleware/json-body-middleware.ts'
import {
  type HostileRequest,
  headerText,
  INT64_EDGES,
  oddText,
  pathSegment,
  petBody,
} from './hostile-requests.ts'

/**
 * Each operation's own hostile input (test/e2e/hostile-input.test.ts): requests it must accept and
 * requests it must refuse, so that every status its route declares is reached in every run and
 * none it does not declare is ever answered. An operation without an entry in OPERATION_FUZZ fails
 * the type-check (docs/adding-an-operation.md).
 */

/** One case: requests sent one after another, or all at once (`together`: two in flight). */
export interface FuzzCase {
  requests: readonly HostileRequest[]
  together?: boolean
}

/** What the run gives an operation's requests: the key to send and pets that exist. */
export interface FuzzContext {
  key: string
  /** Ids of pets created before the run (a delete may remove some as it goes). */
  petIds: readonly string[]
}

export interface OperationFuzz {
  /** Requests the operation accepts, across the edges of what it takes. */
  wellFormed: fc.Arbitrary<FuzzCase>
  /**
   * Requests it refuses, by kind, each kind the same share of a run: every error status of its
   * route the request itself decides (400, 404, 409, 422...). The statuses any keyed call can
   * get (401, 429) and those a JSON body brings (413, 415) are derived from `wellFormed`
   * (fuzzKindsOf), so they need no entry here.
   */
  malformed: Record<string, fc.Arbitrary<FuzzCase>>
}

const one = (request: HostileRequest): FuzzCase => ({ requests: [request] })
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` })
const JSON_TYPE = { 'Content-Type': 'application/json' }

const petStatus = fc.constantFrom('available', 'pending', 'sold')

/** A create's body with edge values that must succeed: names of every script, int64 edges. */
const validPetBody = fc
  .record({
    name: fc
      .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
      .filter((name) => name.trim().length > 0),
    categoryId: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    status: fc.option(petStatus, { nil: undefined }),
  })
  .map(
    ({ name, categoryId, status }) =>
      `{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`,
  )

/** A key no other case sends: a replay or a reuse is always this case's own. */
const freshIdempotencyKey = fc.uuid().map((uuid) => `fuzz-${uuid}`)

const createPet = (key: string, body: string, idempotencyKey?: string): HostileRequest => ({
  method: 'POST',
  path: '/pets',
  headers: {
    ...bearer(key),
    ...JSON_TYPE,
    ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
  },
  body,
})

const getPet = (key: string, petId: string): HostileRequest => ({
  method: 'GET',
  path: `/pets/${petId}`,
  headers: bearer(key),
})

const listPets = (key: string, query: Record<string, string>): HostileRequest => {
  const search = new URLSearchParams(query)
  return {
    method: 'GET',
    path: `/pets${search.size > 0 ? `?${search}` : ''}`,
    headers: bearer(key),
  }
}

/** Each operation's requests, by operation id: a route without an entry fails the type-check. */
export const OPERATION_FUZZ = {
  listPets: ({ key }) => ({
    wellFormed: fc
      .record({
        limit: fc.option(fc.integer({ min: 1, max: 100 }).map(String), { nil: undefined }),
        status: fc.option(petStatus, { nil: undefined }),
      })
      .map((query) =>
        one(
          listPets(
            key,
            Object.fromEntries(Object.entries(query).filter(([, v]) => v)) as Record<
              string,
              string
            >,
          ),
        ),
      ),
    malformed: {
      badQuery: fc
        .oneof(
          fc.record({
            limit: fc.constantFrom('0', '101', '-1', '1.5', 'abc', '1e2', ...INT64_EDGES),
          }),
          fc.record({ status: fc.constantFrom('AVAILABLE', 'lost', ' sold') }),
          fc.record({ cursor: fc.constantFrom('x', 'not-a-cursor', 'a'.repeat(1025)) }),
        )
        .map((query): Record<string, string> => query)
        .filter((query) => !/^(?:[1-9]\d?|100)$/.test(query.limit ?? ''))
        .map((query) => one(listPets(key, query))),
    },
  }),
  createPet: ({ key }) => ({
    wellFormed: fc
      .tuple(validPetBody, fc.option(freshIdempotencyKey, { nil: undefined }))
      .map(([body, idempotencyKey]) => one(createPet(key, body, idempotencyKey))),
    malformed: {
      badBody: petBody.map((body) => one(createPet(key, body))),
      notJson: fc
        .oneof(
          petBody.map((text) => text.slice(0, Math.max(1, text.length - 3))),
          oddText,
          fc.constantFrom('[]', 'null', '"pet"', '1'),
        )
        .map((body) => one(createPet(key, body))),
      // The same Idempotency-Key with another body: 422, nothing written.
      reusedKey: fc
        .tuple(validPetBody, validPetBody, freshIdempotencyKey)
        .filter(([first, second]) => first !== second)
        .map(([first, second, idempotencyKey]) => ({
          requests: [createPet(key, first, idempotencyKey), createPet(key, second, idempotencyKey)],
        })),
      // The same request eight times at once: a repeat while the first still runs gets 409, however
      // the function's process is scheduled (three were not enough for the bundles in a process
      // of their own, .ci/bundles.sh, on a loaded machine).
      keyInFlight: fc.tuple(validPetBody, freshIdempotencyKey).map(([body, idempotencyKey]) => ({
        requests: Array.from({ length: 8 }, () => createPet(key, body, idempotencyKey)),
        together: true,
      })),
    },
  }),
  getPet: ({ key, petIds }) => ({
    wellFormed: fc.constantFrom(...petIds).map((petId) => one(getPet(key, petId))),
    malformed: {
      // Ids within int64 that no create reached.
      unknownId: fc
        .bigInt({ min: 10n ** 12n, max: 2n ** 63n - 1n })
        .map((petId) => one(getPet(key, String(petId)))),
      badId: fc
        .oneof(
          fc.constantFrom('0', '-1', '1.5', '1e3', '9223372036854775808', 'abc', '%20'),
          pathSegment.filter((segment) => !/^\d+$/.test(segment) && !/^\.{1,2}$/.test(segment)),
        )
        .filter((segment) => segment !== '')
        .map((petId) => one(getPet(key, petId))),
    },
  }),
} satisfies Record<OperationId, (context: FuzzContext) => OperationFuzz>

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
