import type { APIGatewayProxyResult } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ListingFacts, SampleRequest } from '#functions/operation-fixture-types.ts'
import { OPERATION_FIXTURES } from '#functions/operation-fixtures.ts'
import { ROUTES, type Route, type RouteDefinition } from '#shared/config/routes-config.ts'
import { cursorIssuer } from '#shared/data/cursor-codec.ts'
import { BlockIdAllocator } from '#shared/data/id-allocator.ts'
import { PetRepository } from '#shared/data/pet-repository.ts'
import { PET_STATUSES, type Pet, type PetStatus } from '#shared/domain/pet-schema.ts'
import { lambdaContext, restEvent } from '#test/support/api-gateway-events.ts'
import {
  type Handler,
  type OperationsUnderIam,
  startOperationsUnderIam,
} from '#test/support/operations-under-iam.ts'

/**
 * The listing contract (docs/api.md, "Pagination"), held by every route that pages with cursors
 * (`cursors: true`), as its fixtures' `listing` describes it: pets in its scope and out of it are
 * made, and each listing is paged through with every status filter, behind its deployed role.
 * Each page holds only pets of its scope and its filter, filtered pages are in id order, paging
 * visits each pet once, a listing narrowed by its path or a filter never scans the table, and a
 * cursor is refused (400) with another filter, another scope or by another listing.
 */
let operations: OperationsUnderIam
let pets: PetRepository

const listings = (ROUTES as readonly RouteDefinition[]).filter((route) => route.cursors)
const factsOf = (route: RouteDefinition): ListingFacts =>
  (OPERATION_FIXTURES as unknown as Record<string, { listing: ListingFacts }>)[route.operationId]
    ?.listing as ListingFacts
const fixturesFile = (route: RouteDefinition) =>
  `functions/${route.functionName}/${route.functionName}-fixtures.ts`
const dependenciesFile = (route: RouteDefinition) =>
  `functions/${route.functionName}/${route.functionName}-dependencies.ts`
/** Where a listing's codec is made, and what it must be made with. */
const codecFix = (route: RouteDefinition) =>
  `new CursorCodec(secret, '${route.operationId}') in ${dependenciesFile(route)}`
/** Which codec encoded a cursor, and for which scope, as the message's evidence. */
const issuerOf = (cursor: string) => {
  const issuer = cursorIssuer(cursor)
  return issuer
    ? `encoded by the codec of '${issuer.listing}', ${issuer.scope === undefined ? 'with no scope' : `for scope ${issuer.scope}`}`
    : 'in no format a codec makes'
}

/** The pets of each listing's scope, made before any listing is paged (each reads the others'). */
const made = new Map<string, Pet[]>()

beforeAll(async () => {
  operations = await startOperationsUnderIam()
  pets = new PetRepository({
    client: operations.env.documentClient,
    tableName: operations.env.petTable,
    ids: new BlockIdAllocator({
      client: operations.env.documentClient,
      tableName: operations.env.petTable,
      blockSize: 50,
    }),
  })
  for (const route of listings) {
    const facts = factsOf(route)
    made.set(route.operationId, await makePets(route, facts.pet))
    if (facts.elsewhere) await makePets(route, facts.elsewhere.pet)
  }
})
afterAll(async () => {
  await operations?.close()
})

const STATUSES: (PetStatus | undefined)[] = [
  'available',
  'available',
  'sold',
  'sold',
  'sold',
  'pending',
  undefined,
]

/** Pets of a scope: every status, some twice or thrice, and some with none. */
const makePets = async (route: RouteDefinition, pet: ListingFacts['pet']): Promise<Pet[]> => {
  const made: Pet[] = []
  for (const [index, status] of STATUSES.entries()) {
    made.push(
      await pets.create({
        name: `${route.operationId} contract ${index}`,
        categoryId: pet.categoryId ?? BigInt(900_000 + index),
        ...(status ? { status } : {}),
      }),
    )
  }
  return made
}

interface Page {
  answer: APIGatewayProxyResult
  body: Pet[]
  next: string | undefined
}

/** One page of a listing, and what it asked DynamoDB for its answer. */
const pageOf = async (
  route: RouteDefinition,
  handler: Handler,
  request: SampleRequest,
  query: Record<string, string>,
) => {
  const before = operations.iam.guard.requests().length
  const answer = await handler(
    restEvent({ method: route.method, resource: route.path, ...request, query }),
    lambdaContext(route.operationId),
  )
  const calls = operations.iam.guard.requests().slice(before)
  const body = answer.statusCode === 200 ? (JSON.parse(answer.body) as Pet[]) : []
  const next = Object.entries(answer.headers ?? {}).find(
    ([name]) => name.toLowerCase() === 'x-next-cursor',
  )?.[1] as string | undefined
  return { answer, body, next, calls } satisfies Page & { calls: unknown }
}

const describeRequest = (
  route: RouteDefinition,
  request: SampleRequest,
  query: Record<string, string>,
) => {
  let path = route.path
  for (const [name, value] of Object.entries(request.pathParameters ?? {})) {
    path = path.replace(`{${name}}`, value)
  }
  return `GET ${path}?${new URLSearchParams(query)}`
}

/** Every page of a listing with a filter: the pets, in order, and what was wrong on the way. */
const pageThrough = async (
  route: RouteDefinition,
  handler: Handler,
  facts: ListingFacts,
  status: PetStatus | undefined,
) => {
  const problems: string[] = []
  const seen: Pet[] = []
  let cursor: string | undefined
  for (let page = 0; page < 50; page += 1) {
    const query: Record<string, string> = {
      limit: '2',
      ...(status ? { status } : {}),
      ...(cursor ? { cursor } : {}),
    }
    const asked = describeRequest(route, facts.request, query)
    const deniedBefore = operations.iam.guard.denials().length
    const { answer, body, next, calls } = await pageOf(route, handler, facts.request, query)
    if (answer.statusCode !== 200) {
      // A refusal of its role says more than the 5xx it led to.
      const denied = operations.iam.guard.denials().slice(deniedBefore)
      problems.push(
        `${route.operationId} answered ${answer.statusCode} to ${asked}: ${denied.length > 0 ? denied.join('; ') : answer.body.slice(0, 200)}`,
      )
      break
    }
    const narrowed =
      status !== undefined || Object.keys(facts.request.pathParameters ?? {}).length > 0
    if (narrowed && calls.some((call) => call.action === 'Scan')) {
      problems.push(
        `${route.operationId} scanned the table for ${asked}: a listing narrowed by its path or a filter queries an index (a QueryCommand with the IndexName of its index in shared/config/table-indexes-config.ts, in the repository of shared/data/), never a scan`,
      )
    }
    for (const pet of body) {
      if (status !== undefined && pet.status !== status) {
        problems.push(
          `${route.operationId} answered ${asked} with pet ${pet.id}, whose status is ${pet.status ?? 'none'}: apply the request's status filter (in its repository query: the key condition of an index keyed by status, or a FilterExpression on status)`,
        )
      }
      if (
        facts.pet.categoryId !== undefined &&
        String(pet.categoryId) !== String(facts.pet.categoryId)
      ) {
        problems.push(
          `${route.operationId} answered ${asked} with pet ${pet.id} of categoryId ${pet.categoryId}, which is not in its scope (listing.pet of ${fixturesFile(route)})`,
        )
      }
    }
    seen.push(...body)
    if (!next) break
    cursor = next
  }
  return { seen, problems }
}

describe.each(listings.map((route) => [route.operationId, route] as const))(
  'the listing contract of %s',
  (operationId, route) => {
    let handler: Handler
    const facts = factsOf(route as Route)

    beforeAll(async () => {
      handler = await operations.load(route as Route, 'listing-contract')
    })

    it.each([undefined, ...PET_STATUSES])(
      'pages with status=%s: only its scope and filter, filtered pages in id order, each pet of it once, no scan when narrowed',
      async (status) => {
        const { seen, problems } = await pageThrough(route, handler, facts, status)
        const ids = seen.map((pet) => pet.id)
        const wanted = (made.get(operationId) ?? [])
          .filter((pet) => status === undefined || pet.status === status)
          .map((pet) => pet.id)
        const missing = wanted.filter((id) => !ids.includes(id))
        const twice = ids.filter((id, index) => ids.indexOf(id) !== index)
        if (missing.length > 0 || twice.length > 0) {
          problems.push(
            `${operationId}'s pages with status=${status ?? '(none)'} ${missing.length > 0 ? `never listed pets ${missing.join(', ')}` : ''}${twice.length > 0 ? ` listed pets ${twice.join(', ')} twice` : ''}: each page must go on from the previous page's last pet (its cursor's lastId as ExclusiveStartKey)${status === undefined ? '' : `, and a filtered page must read on until it is full (a FilterExpression's query returns what it read less what it filtered out: query again from LastEvaluatedKey until the page holds limit + 1 pets, as PetRepository.list does)`}`,
          )
        }
        const inScope = ids.filter((id) => made.get(operationId)?.some((pet) => pet.id === id))
        if (status !== undefined && inScope.join() !== [...inScope].sort((a, b) => a - b).join()) {
          problems.push(
            `${operationId}'s pages with status=${status} are not in id order: ${inScope.join(', ')}`,
          )
        }
        expect(problems).toEqual([])
      },
    )

    it('issues cursors under its own operation id, with its scope when its path narrows it', async () => {
      const { next } = await pageOf(route, handler, facts.request, { limit: '1', status: 'sold' })
      expect(
        next,
        `${operationId} gave no X-Next-Cursor for a page of 1 with more pets to come`,
      ).toBeDefined()
      const issuer = cursorIssuer(next as string)
      const problems: string[] = []
      if (issuer?.listing !== operationId) {
        problems.push(
          `${operationId} issued a cursor ${issuerOf(next as string)}: a listing's codec is made with its own operation id, ${codecFix(route)}, so no other listing reads its cursors`,
        )
      }
      if (facts.elsewhere && issuer?.scope === undefined) {
        problems.push(
          `${operationId} issued a cursor with no scope, though its path narrows it (listing.elsewhere of ${fixturesFile(route)}): encode and decode with the request's scope, CursorCodec.encode({ lastId, status, scope }) and CursorCodec.decode(cursor, status, scope) in functions/${route.functionName}/${route.functionName}-handler.ts`,
        )
      }
      expect(problems).toEqual([])
    })

    it('refuses a cursor made for another status filter, another scope of it, or by another listing', async () => {
      const first = await pageOf(route, handler, facts.request, { limit: '1', status: 'sold' })
      expect(
        first.next,
        `${operationId} gave no X-Next-Cursor for a page of 1 with more pets to come`,
      ).toBeDefined()
      const cursor = first.next as string
      const ownFix = `its codec made with its own operation id, ${codecFix(route)}; CursorCodec.decode with the request's status and scope`
      /** What was refused, the request, and the fix to name if it is not. */
      const refusals: [string, SampleRequest, Record<string, string>, string][] = [
        [
          'a cursor made for status=sold, with status=available',
          facts.request,
          { status: 'available', cursor },
          ownFix,
        ],
      ]
      if (facts.elsewhere) {
        refusals.push([
          'a cursor made for another scope of it',
          facts.elsewhere.request,
          { status: 'sold', cursor },
          ownFix,
        ])
      }
      for (const other of listings.filter((candidate) => candidate !== route)) {
        const otherFacts = factsOf(other)
        const otherHandler = await operations.load(other as Route, 'listing-contract')
        const issued = await pageOf(other, otherHandler, otherFacts.request, {
          limit: '1',
          status: 'sold',
        })
        if (issued.next) {
          // Which side is the copy: a cursor encoded under another listing's id was made by a
          // codec copied into the issuer; one encoded under the issuer's own id was read by a
          // codec of this listing made with the issuer's id.
          const issuerIsCopy = cursorIssuer(issued.next)?.listing !== other.operationId
          refusals.push([
            `a cursor ${other.operationId} issued (${issuerOf(issued.next)})`,
            facts.request,
            { status: 'sold', cursor: issued.next },
            issuerIsCopy
              ? `the copy is ${other.operationId}'s codec, not ${operationId}'s: make it ${codecFix(other)}, and encode and decode with its scope`
              : ownFix,
          ])
        }
      }
      const accepted: string[] = []
      for (const [what, request, query, fix] of refusals) {
        const { answer } = await pageOf(route, handler, request, { limit: '1', ...query })
        if (answer.statusCode !== 400) {
          accepted.push(
            `${operationId} answered ${answer.statusCode} to ${what}: a listing accepts only the cursors it issued for the same scope and filter, and answers 400 validation_failed to any other (${fix})`,
          )
        }
      }
      expect(accepted).toEqual([])
    })
  },
)
