import type { OperationFixtures } from '#functions/operation-fixture-types.ts'

// What getPet's folder declares for the tests and the bench (functions/operation-fixture-types.ts).

const getPet = (key: string, petId: string) => ({
  method: 'GET',
  path: `/pets/${petId}`,
  headers: { Authorization: `Bearer ${key}` },
})

export const fixtures = {
  outcomes: {
    // The pet createPet's 201 made.
    200: { requests: [{ pathParameters: { petId: '1' } }] },
    404: { requests: [{ pathParameters: { petId: '987654321' } }] },
    410: { testedIn: 'test/unit/deprecation-middleware.test.ts (a clock past the sunset)' },
  },
  fuzz: ({ fc, key, petIds, hostile }) => ({
    wellFormed: fc.constantFrom(...petIds).map((petId) => ({ requests: [getPet(key, petId)] })),
    malformed: {
      // Ids within int64 that no create reached.
      unknownId: fc
        .bigInt({ min: 10n ** 12n, max: 2n ** 63n - 1n })
        .map((petId) => ({ requests: [getPet(key, String(petId))] })),
      badId: fc
        .oneof(
          fc.constantFrom('0', '-1', '1.5', '1e3', '9223372036854775808', 'abc', '%20'),
          hostile.pathSegment.filter(
            (segment) => !/^\d+$/.test(segment) && !/^\.{1,2}$/.test(segment),
          ),
        )
        .filter((segment) => segment !== '')
        .map((petId) => ({ requests: [getPet(key, petId)] })),
    },
  }),
  bench: {
    event: { pathParameters: { petId: '1' } },
    dynamo: ({ limiter, pet }) => ({ ...limiter, 'GetItem pets': () => ({ Item: pet(1) }) }),
    local: { path: '/pets/1' },
    budget: {
      bundleBytes: 418_000,
      bundledModules: 602,
      builtinModules: 179,
      callsPerRequest: { UpdateItem: 1, GetItem: 1 },
      roundTripsPerRequest: 1,
      initInstructionsRatio: 1.27,
    },
  },
} satisfies OperationFixtures<'getPet'>
