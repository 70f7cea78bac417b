import type fc from 'fast-check'
import type { COMMON_ERROR_STATUSES, Route, RouteDefinition } from '#shared/config/routes-config.ts'

/**
 * The shape of an operation's fixtures (`functions/<fn>/<fn>-fixtures.ts`): what the tests and
 * the bench exercise its function with and hold it to. Its sample requests and their outcomes,
 * its hostile input, and what the bench sends it, answers for DynamoDB and the figures it must
 * stay within. The tests and the bench read every operation's fixtures through the route table
 * (functions/operation-fixtures.ts), so no registry lists operations by hand. Types only: a
 * fixtures file imports nothing that runs, so no Lambda and no bench process pays for it.
 */

/** A request as the route's Lambda gets it; method and resource come from its route. */
export interface SampleRequest {
  pathParameters?: Record<string, string>
  /** Query values; an array is a repeated parameter. */
  query?: Record<string, string | string[]>
  headers?: Record<string, string>
  body?: string | null
}

/**
 * One outcome: requests whose last one gets the outcome's status (those before it set the scene),
 * or, for an outcome no single invocation can give, where it is tested instead.
 */
export type SampleOutcome = { requests: readonly SampleRequest[] } | { testedIn: string }

/** Every status the route declares beyond the common ones, its success included, is a key. */
export type OutcomesOf<R extends RouteDefinition> = Record<
  R['successStatus'] | R['errors'][number],
  SampleOutcome
> &
  Partial<Record<(typeof COMMON_ERROR_STATUSES)[number], SampleOutcome>>

/** A request of the hostile-input run, sent over HTTP to the local server. */
export interface HostileRequest {
  method: string
  /** Below /v1, with its query string. */
  path: string
  headers: Record<string, string>
  body?: string
  /** false: no Host header at all (node:http adds one otherwise). */
  setHost?: boolean
}

/** One case: requests sent one after another, or all at once (`together`: two in flight). */
export interface FuzzCase {
  requests: readonly HostileRequest[]
  together?: boolean
}

/**
 * What the hostile-input run gives an operation's generator: fast-check, the key to send, pets
 * of the operation's own (made for it alone: a delete removes none another operation reads),
 * and the run's building blocks of hostile text (test/support/hostile-requests.ts).
 */
export interface FuzzContext {
  fc: typeof fc
  key: string
  petIds: readonly string[]
  hostile: {
    /** Numbers at and past the int64 and double edges, as text. */
    int64Edges: readonly string[]
    /** Short strings of every kind: control, bidi, lone surrogates, long. */
    oddText: fc.Arbitrary<string>
    /** Pet bodies, mostly malformed. */
    petBody: fc.Arbitrary<string>
    /** Path segments: int64 edges, odd characters, percent-encodings. */
    pathSegment: fc.Arbitrary<string>
  }
}

export interface OperationFuzz {
  /** Requests the operation accepts, across the edges of what it takes. */
  wellFormed: fc.Arbitrary<FuzzCase>
  /**
   * Requests it refuses, by kind, each kind the same share of a run: every error status of its
   * route the request itself decides (400, 404, 409, 422...). The statuses any keyed call can
   * get (401, 429) and those a JSON body brings (413, 415) are derived from `wellFormed`, so
   * they need no entry here.
   */
  malformed: Record<string, fc.Arbitrary<FuzzCase>>
}

/** A call as the bench's fake DynamoDB names it: the action and the table, e.g. `GetItem pets`. */
export type FakeCallName = `${string} ${'pets' | 'idempotency' | 'rateLimits' | 'keyMirror'}`
export type FakeAnswer = (input: Record<string, unknown>) => Record<string, unknown>

/** What the bench's fake DynamoDB offers a declaration's answers (bench/support/fake-dynamo-http.ts). */
export interface FakeDynamoKit {
  /** A stored pet item, in DynamoDB JSON. */
  pet: (id: number) => Record<string, unknown>
  /** A page of pets for a Query or Scan of `Limit` items. */
  page: FakeAnswer
  /** The rate limiter's answer: every rate-limited operation makes this call. */
  limiter: Record<'UpdateItem rateLimits', FakeAnswer>
}

/** The bench's deterministic figures for the operation's function (bench/bench-budgets.ts). */
export interface FunctionBudget {
  /** index.mjs, bytes: at most this. */
  bundleBytes: number
  /** Input modules esbuild put in the bundle: at most this. */
  bundledModules: number
  /** Node built-in modules loaded by the end of the first invocation: at most this. */
  builtinModules: number
  /** DynamoDB calls per request, by operation: exactly these (to two decimals). */
  callsPerRequest: Record<string, number>
  /** DynamoDB round trips a request waits for: exactly this (to two decimals). */
  roundTripsPerRequest: number
  /**
   * Instructions from process start to the end of the first invocation (minus a bare node start),
   * counted by valgrind, as a ratio to the floor plus the limiter write (the authorizer: its
   * floor): at most this. A count, not a time: it varies by about 0.1% between runs.
   */
  initInstructionsRatio: number
}

/** What `npm run bench` measures the operation's function with (its floor is `bench/floors/<fn>-floor.ts`). */
export interface BenchFacts {
  /** The event the function answers with its success status. */
  event: SampleRequest
  /** DynamoDB's answer to each call the function and its floor make for that event. */
  dynamo: (kit: FakeDynamoKit) => Partial<Record<FakeCallName, FakeAnswer>>
  /** The request the local throughput run repeats (it must succeed each time). */
  local: { path: string; body?: string }
  budget: FunctionBudget
}

/**
 * A listing's facts for the listing contract (test/integration/listing-contract.test.ts): every
 * route with `cursors: true` pages with limit, status filter and cursor, and the check makes pets
 * in and out of its scope, pages through it, and holds it to the contract (docs/api.md,
 * "Pagination").
 */
export interface ListingFacts {
  /** A page request as the route takes it: its path parameters (the check adds the query). */
  request: SampleRequest
  /** What a pet needs to be in that listing (its scope), as createPet's body says it. */
  pet: { categoryId?: bigint }
  /** Another scope of the same listing, for a listing narrowed by its path: its request and pets. */
  elsewhere?: { request: SampleRequest; pet: { categoryId?: bigint } }
}

type RouteOf<Id extends Route['operationId']> = Extract<Route, { operationId: Id }>

/** An operation's fixtures: `export const fixtures = {…} satisfies OperationFixtures<'getPet'>`. */
export type OperationFixtures<Id extends Route['operationId']> = {
  /** Requests that take it to every outcome its route declares (route-table-access.test.ts). */
  outcomes: OutcomesOf<RouteOf<Id>>
  /** Its hostile input (test/e2e/hostile-input.test.ts). */
  fuzz: (context: FuzzContext) => OperationFuzz
  bench: BenchFacts
} & (RouteOf<Id> extends { cursors: true } ? { listing: ListingFacts } : { listing?: never })
