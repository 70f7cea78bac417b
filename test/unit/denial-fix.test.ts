import { describe, expect, it } from 'vitest'
import { type Denial, denialFix, denialMessage } from '#local/deployed-iam/denial-fix.ts'
import { ROUTES, type RouteDefinition } from '#shared/config/routes-config.ts'

/**
 * The fix a refused DynamoDB request is told: the change in the route entry (or the CDK) that
 * makes the deployed role allow it, or the change in the code that stops it asking. Each case
 * is a mistake an operation's author can make.
 */
const denial = (overrides: Partial<Denial>): Denial => ({
  service: 'listPets',
  action: 'Query',
  table: 'pets',
  indexName: undefined,
  reason: 'no identity-based policy allows it',
  ...overrides,
})

describe('the fix for a request the deployed role refuses', () => {
  it('tells a listing that scans where it names an index to query the index, not to take a level that scans', () => {
    const listing = {
      ...ROUTES[0],
      operationId: 'listCategoryPets',
      tables: { pets: 'QUERY' },
      indexes: { pets: ['status'] },
    } as RouteDefinition
    const fix = denialFix(denial({ service: 'listCategoryPets', action: 'Scan' }), [listing])
    expect(fix).toMatch(
      /^it scanned pets, but it reads pets through its index status: query the index \(a QueryCommand with IndexName/,
    )
  })

  it('tells an operation that queries an index its route entry does not name to name it', () => {
    const fix = denialFix(
      denial({ service: 'getPet', action: 'Query', indexName: 'status-id-index' }),
    )
    expect(fix).toMatch(
      /its level LOOKUP on pets queries no index: .*QUERY.*indexes: \{ pets: \['status'\] \}/,
    )
  })

  it('tells an operation that queries an index no table definition has to define it', () => {
    const fix = denialFix(denial({ indexName: 'no-such-index' }))
    expect(fix).toMatch(
      /queried index no-such-index, which TABLE_INDEXES.pets in shared\/config\/table-indexes-config.ts does not define: add it there/,
    )
  })

  it('tells an operation that uses a table its route entry does not name to add it', () => {
    const fix = denialFix(denial({ service: 'getPet', action: 'PutItem', table: 'idempotency' }))
    expect(fix).toMatch(
      /idempotency is a table its route entry does not name: add tables.idempotency with a level that grants PutItem \(such as APPEND\) to getPet/,
    )
  })

  it('tells an operation whose level lacks the action to take one that grants it', () => {
    const fix = denialFix(denial({ service: 'getPet', action: 'DeleteItem' }))
    expect(fix).toMatch(
      /its level LOOKUP on pets does not grant DeleteItem: in shared\/config\/routes-config.ts give getPet tables.pets a level .* that grants DeleteItem/,
    )
  })

  it('blames the CDK when the route entry grants what the synthesized role refused', () => {
    const fix = denialFix(denial({ indexName: 'status-id-index' }))
    expect(fix).toMatch(
      /its route entry grants this .* but the synthesized role does not: the CDK's translation/,
    )
    expect(fix).toContain('infra/constructs/operation-functions-construct.ts')
  })

  it('points the authorizer and the key sync at their constructs', () => {
    expect(
      denialFix(denial({ service: 'authorizer', action: 'PutItem', table: 'keyMirror' })),
    ).toContain('infra/constructs/api-key-authorizer-construct.ts')
    expect(
      denialFix(denial({ service: 'key-sync', action: 'DeleteItem', table: 'keyMirror' })),
    ).toContain('infra/constructs/key-sync-construct.ts')
  })

  it('says what was refused, why and on what, then the fix', () => {
    const message = denialMessage(
      denial({ service: 'getPet', action: 'Scan' }),
      'arn:aws:dynamodb:us-east-1:000000000000:table/petstore-local-pets',
    )
    expect(message).toMatch(
      /^getPet may not dynamodb:Scan on arn:aws:dynamodb:us-east-1:000000000000:table\/petstore-local-pets \(no identity-based policy allows it; its deployed role would refuse it with AccessDeniedException\): its level LOOKUP/,
    )
  })
})
