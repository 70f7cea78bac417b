import type { FuzzContext, OperationFixtures } from '#functions/operation-fixture-types.ts'

// What createPet's folder declares for the tests and the bench (functions/operation-fixture-types.ts).

const JSON_BODY = { 'Content-Type': 'application/json' }
const REX = '{"name":"Rex","categoryId":1,"status":"available"}'

const createPet = (key: string, body: string, idempotencyKey?: string) => ({
  method: 'POST',
  path: '/pets',
  headers: {
    Authorization: `Bearer ${key}`,
    ...JSON_BODY,
    ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
  },
  body,
})

/** A create's body with edge values that must succeed: names of every script, int64 edges. */
const validPetBody = ({ fc }: FuzzContext) =>
  fc
    .record({
      name: fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
        .filter((name) => name.trim().length > 0),
      categoryId: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      status: fc.option(fc.constantFrom('available', 'pending', 'sold'), { nil: undefined }),
    })
    .map(
      ({ name, categoryId, status }) =>
        `{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`,
    )

let counter = 0

export const fixtures = {
  outcomes: {
    // A create reserves an id block (counter update), claims its Idempotency-Key and puts the
    // pet; the repeat under the same key is a replay, which reads the stored answer back.
    201: {
      requests: [
        { headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' }, body: REX },
        { headers: { ...JSON_BODY, 'Idempotency-Key': 'route-table-access' }, body: REX },
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
  fuzz: (context) => {
    const { fc, key, hostile } = context
    const body = validPetBody(context)
    /** A key no other case sends: a replay or a reuse is always this case's own. */
    const freshIdempotencyKey = fc.uuid().map((uuid) => `fuzz-${uuid}`)
    return {
      wellFormed: fc
        .tuple(body, fc.option(freshIdempotencyKey, { nil: undefined }))
        .map(([text, idempotencyKey]) => ({ requests: [createPet(key, text, idempotencyKey)] })),
      malformed: {
        badBody: hostile.petBody.map((text) => ({ requests: [createPet(key, text)] })),
        notJson: fc
          .oneof(
            hostile.petBody.map((text) => text.slice(0, Math.max(1, text.length - 3))),
            hostile.oddText,
            fc.constantFrom('[]', 'null', '"pet"', '1'),
          )
          .map((text) => ({ requests: [createPet(key, text)] })),
        // The same Idempotency-Key with another body: 422, nothing written.
        reusedKey: fc
          .tuple(body, body, freshIdempotencyKey)
          .filter(([first, second]) => first !== second)
          .map(([first, second, idempotencyKey]) => ({
            requests: [
              createPet(key, first, idempotencyKey),
              createPet(key, second, idempotencyKey),
            ],
          })),
        // The same request eight times at once: a repeat while the first still runs gets 409,
        // however the function's process is scheduled (three were not enough for the bundles in a
        // process of their own, on a loaded machine).
        keyInFlight: fc.tuple(body, freshIdempotencyKey).map(([text, idempotencyKey]) => ({
          requests: Array.from({ length: 8 }, () => createPet(key, text, idempotencyKey)),
          together: true,
        })),
      },
    }
  },
  bench: {
    event: {
      headers: JSON_BODY,
      // A safe-integer categoryId: the floor parses with JSON.parse, which would round int64.
      body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'available' }),
    },
    dynamo: ({ limiter }) => ({
      ...limiter,
      // The id counter reserves blocks of 50.
      'UpdateItem pets': () => {
        counter += 50
        return { Attributes: { lastReservedId: { N: String(counter) } } }
      },
      'PutItem pets': () => ({}),
    }),
    local: {
      path: '/pets',
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }),
    },
    budget: {
      bundleBytes: 430_000,
      bundledModules: 607,
      builtinModules: 179,
      callsPerRequest: { UpdateItem: 1.02, PutItem: 1 },
      roundTripsPerRequest: 2.02,
      initInstructionsRatio: 1.3,
    },
  },
} satisfies OperationFixtures<'createPet'>
