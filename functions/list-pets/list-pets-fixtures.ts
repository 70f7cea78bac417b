import type { OperationFixtures } from '#functions/operation-fixture-types.ts'

// What listPets' folder declares for the tests and the bench (functions/operation-fixture-types.ts).

const listPets = (key: string, query: Record<string, string>) => {
  const search = new URLSearchParams(query)
  return {
    method: 'GET',
    path: `/pets${search.size > 0 ? `?${search}` : ''}`,
    headers: { Authorization: `Bearer ${key}` },
  }
}

export const fixtures = {
  outcomes: {
    // Unfiltered: a scan; filtered: a query of the status index.
    200: { requests: [{ query: { limit: '5' } }, { query: { status: 'available' } }] },
    400: { requests: [{ query: { limit: '0' } }] },
  },
  fuzz: ({ fc, key, hostile }) => ({
    wellFormed: fc
      .record({
        limit: fc.option(fc.integer({ min: 1, max: 100 }).map(String), { nil: undefined }),
        status: fc.option(fc.constantFrom('available', 'pending', 'sold'), { nil: undefined }),
      })
      .map((query) => ({
        requests: [
          listPets(
            key,
            Object.fromEntries(Object.entries(query).filter(([, v]) => v)) as Record<
              string,
              string
            >,
          ),
        ],
      })),
    malformed: {
      badQuery: fc
        .oneof(
          fc.record({
            limit: fc.constantFrom('0', '101', '-1', '1.5', 'abc', '1e2', ...hostile.int64Edges),
          }),
          fc.record({ status: fc.constantFrom('AVAILABLE', 'lost', ' sold') }),
          fc.record({ cursor: fc.constantFrom('x', 'not-a-cursor', 'a'.repeat(1025)) }),
        )
        .map((query): Record<string, string> => query)
        .filter((query) => !/^(?:[1-9]\d?|100)$/.test(query.limit ?? ''))
        .map((query) => ({ requests: [listPets(key, query)] })),
    },
  }),
  // Every pet, no scope: the contract's pages with and without a status filter.
  listing: { request: {}, pet: {} },
  bench: {
    event: { query: { limit: '20', status: 'available' } },
    dynamo: ({ limiter, page }) => ({ ...limiter, 'Query pets': page, 'Scan pets': page }),
    local: { path: '/pets?limit=20&status=available' },
    budget: {
      bundleBytes: 425_000,
      bundledModules: 603,
      builtinModules: 179,
      callsPerRequest: { UpdateItem: 1, Query: 1 },
      roundTripsPerRequest: 1,
      initInstructionsRatio: 1.28,
    },
  },
} satisfies OperationFixtures<'listPets'>
