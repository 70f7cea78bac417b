import { describe, expect, it } from 'vitest'
import { KEY_MAC_VERSIONS } from '#infra/config/key-mac-config.ts'
import { indexChangeProblem } from '#infra/config/released-indexes-config.ts'
import { indexesOf, TABLE_INDEXES } from '#shared/config/table-indexes-config.ts'
import {
  globalSecondaryIndexOf,
  IDEMPOTENCY_TABLE,
  idempotencyTableDefinition,
  keyMirrorTableDefinition,
  petTableDefinition,
  RATE_LIMIT_TABLE,
  rateLimitTableDefinition,
  storeKeyTableDefinition,
} from '#shared/data/table-keys.ts'
import { appStage, type CfnResource, propsOf, resourcesOf } from './support/synth-app.ts'

/** The five tables of a stage, found by the construct ids the data stack gives them. */
const tablesOf = (stage: 'staging' | 'production') => {
  const tables = resourcesOf(appStage(stage).data, 'AWS::DynamoDB::Table')
  expect(tables).toHaveLength(5)
  const byId = (prefix: string) => {
    const found = tables.filter(([logicalId]) => logicalId.startsWith(prefix))
    expect(found).toHaveLength(1)
    return found[0]?.[1] as CfnResource
  }
  return {
    pets: byId('PetTable'),
    rateLimits: byId('RateLimitTable'),
    idempotency: byId('IdempotencyTable'),
    keyMirror: byId('KeyMirrorTable'),
    storeKeys: byId('StoreKeyTable'),
  }
}

describe.each(['staging', 'production'] as const)('%s tables', (stage) => {
  it('pet table: the keys and status GSI the repository and local server use', () => {
    const { pets } = tablesOf(stage)
    const definition = petTableDefinition('any')
    expect(propsOf(pets)).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: definition.KeySchema,
      GlobalSecondaryIndexes: definition.GlobalSecondaryIndexes,
    })
    expect(propsOf(pets).AttributeDefinitions).toEqual(
      expect.arrayContaining(definition.AttributeDefinitions ?? []),
    )
    // Spelled out as well: partition key pk (S), the status GSI status (S) / id (N), all
    // attributes, whatever other indexes the table has.
    expect(propsOf(pets)).toMatchObject({
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      GlobalSecondaryIndexes: expect.arrayContaining([
        {
          IndexName: TABLE_INDEXES.pets.status.indexName,
          KeySchema: [
            { AttributeName: 'status', KeyType: 'HASH' },
            { AttributeName: 'id', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ]),
    })
    expect(propsOf(pets).AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'status', AttributeType: 'S' },
        { AttributeName: 'id', AttributeType: 'N' },
      ]),
    )
  })

  it('every table has exactly the indexes shared/config/table-indexes-config.ts defines for it, as the local and test tables do', () => {
    const tables = tablesOf(stage)
    for (const table of Object.keys(tables) as (keyof typeof tables)[]) {
      const defined = indexesOf(table).map(([, index]) => globalSecondaryIndexOf(index))
      const synthesized = (propsOf(tables[table]).GlobalSecondaryIndexes ?? []) as unknown[]
      expect(
        synthesized,
        `the ${stage} data stack's ${table} table has other indexes than TABLE_INDEXES.${table} defines: infra/stacks/petstore-data-stack.ts makes each table from its definition in shared/data/table-keys.ts, and infra/constructs/petstore-table-construct.ts adds every index of it`,
      ).toEqual(defined)
    }
  })

  it('changes at most one index of a table over the last release (RELEASED_INDEXES), as one CloudFormation update can', () => {
    const tables = tablesOf(stage)
    for (const table of Object.keys(tables) as (keyof typeof tables)[]) {
      const names = (
        (propsOf(tables[table]).GlobalSecondaryIndexes ?? []) as { IndexName: string }[]
      ).map((index) => index.IndexName)
      expect(indexChangeProblem(table, names), `${stage} ${table}`).toBeUndefined()
    }
  })

  it('pet table: encrypted at rest and recoverable to any point in time', () => {
    const { pets } = tablesOf(stage)
    expect(propsOf(pets)).toMatchObject({
      SSESpecification: { SSEEnabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    })
  })

  it('rate-limit table: on demand, encrypted, counters expire by TTL', () => {
    const { rateLimits } = tablesOf(stage)
    expect(propsOf(rateLimits)).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: rateLimitTableDefinition('any').KeySchema,
      AttributeDefinitions: [{ AttributeName: RATE_LIMIT_TABLE.partitionKey, AttributeType: 'S' }],
      SSESpecification: { SSEEnabled: true },
      TimeToLiveSpecification: { AttributeName: RATE_LIMIT_TABLE.ttlAttribute, Enabled: true },
    })
    expect(propsOf(rateLimits).TimeToLiveSpecification).toEqual({
      AttributeName: 'expiresAt',
      Enabled: true,
    })
  })

  it('idempotency table: on demand, encrypted, records expire by TTL after 24 hours', () => {
    const { idempotency } = tablesOf(stage)
    expect(propsOf(idempotency)).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: idempotencyTableDefinition('any').KeySchema,
      AttributeDefinitions: idempotencyTableDefinition('any').AttributeDefinitions,
      SSESpecification: { SSEEnabled: true },
      TimeToLiveSpecification: { AttributeName: IDEMPOTENCY_TABLE.ttlAttribute, Enabled: true },
    })
    expect(propsOf(idempotency).GlobalSecondaryIndexes).toBeUndefined()
    expect(idempotency.DeletionPolicy).toBe('Delete')
  })

  it('key mirror table: on demand, encrypted, keyed by the key hash, no recovery', () => {
    const { keyMirror } = tablesOf(stage)
    expect(propsOf(keyMirror)).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: keyMirrorTableDefinition('any').KeySchema,
      AttributeDefinitions: keyMirrorTableDefinition('any').AttributeDefinitions,
      SSESpecification: { SSEEnabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: false },
    })
    expect(propsOf(keyMirror).KeySchema).toEqual([{ AttributeName: 'keyHash', KeyType: 'HASH' }])
    expect(propsOf(keyMirror).GlobalSecondaryIndexes).toBeUndefined()
    expect(propsOf(keyMirror).TimeToLiveSpecification).toBeUndefined()
  })

  it('store key table: on demand, encrypted, keyed by the key id the key carries, no index', () => {
    const { storeKeys } = tablesOf(stage)
    expect(propsOf(storeKeys)).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: storeKeyTableDefinition('any').KeySchema,
      AttributeDefinitions: storeKeyTableDefinition('any').AttributeDefinitions,
      SSESpecification: { SSEEnabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    })
    expect(propsOf(storeKeys).KeySchema).toEqual([{ AttributeName: 'keyId', KeyType: 'HASH' }])
    expect(propsOf(storeKeys).GlobalSecondaryIndexes).toBeUndefined()
    expect(propsOf(storeKeys).TableName).toBeUndefined()
  })

  it('makes one key MAC secret per version in use, generated at deploy time, and publishes the current one', () => {
    const secrets = resourcesOf(appStage(stage).data, 'AWS::SecretsManager::Secret')
    expect(secrets.map(([logicalId]) => logicalId.replace(/[0-9A-F]{8}$/, ''))).toEqual(
      KEY_MAC_VERSIONS.map((version) => `KeyMacSecretV${version}`),
    )
    for (const [, secret] of secrets) {
      expect(propsOf(secret)).toMatchObject({
        GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true },
      })
      expect(propsOf(secret).SecretString).toBeUndefined()
    }
    const outputs = appStage(stage).data.toJSON().Outputs as Record<string, { Value: unknown }>
    expect(outputs.KeyMacVersion?.Value).toBe(String(KEY_MAC_VERSIONS.at(-1)))
    expect(outputs.KeyMacSecretArn?.Value).toEqual({ Ref: secrets.at(-1)?.[0] })
  })

  it('names no table, so CloudFormation can replace one and two stages can share an account', () => {
    const { pets, rateLimits, idempotency, keyMirror } = tablesOf(stage)
    expect(propsOf(idempotency).TableName).toBeUndefined()
    expect(propsOf(pets).TableName).toBeUndefined()
    expect(propsOf(rateLimits).TableName).toBeUndefined()
    expect(propsOf(keyMirror).TableName).toBeUndefined()
  })

  it('publishes every table name', () => {
    const outputs = appStage(stage).data.toJSON().Outputs as Record<string, unknown>
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining([
        'PetTableName',
        'RateLimitTableName',
        'IdempotencyTableName',
        'KeyMirrorTableName',
        'StoreKeyTableName',
      ]),
    )
  })

  it('creates no custom resource for the id counter: the allocator creates it lazily', () => {
    const types = Object.values(
      appStage(stage).data.toJSON().Resources as Record<string, CfnResource>,
    ).map((resource) => resource.Type)
    expect(types.filter((type) => type !== 'AWS::SecretsManager::Secret')).toEqual(
      Array(5).fill('AWS::DynamoDB::Table'),
    )
  })
})

describe('a new index on its way to production', () => {
  it('refuses two new indexes of one table in one deploy, naming the one to ship first', () => {
    expect(indexChangeProblem('pets', ['status-id-index', 'category-id-index'])).toBeUndefined()
    expect(
      indexChangeProblem('pets', ['status-id-index', 'category-id-index', 'name-index']),
    ).toMatch(
      /^the pets table adds category-id-index, name-index in one deploy, over the indexes of the last release \(infra\/config\/released-indexes-config.ts\): CloudFormation adds or deletes one global secondary index per table update. Ship category-id-index alone first/,
    )
  })

  it('refuses an index added and another deleted in one deploy (CloudFormation fails such an update)', () => {
    expect(indexChangeProblem('pets', ['category-id-index'])).toMatch(
      /adds category-id-index and deletes status-id-index in one deploy/,
    )
    expect(indexChangeProblem('pets', [])).toBeUndefined()
  })
})

describe('data retention', () => {
  it('production keeps its pets: RETAIN on delete and replace, deletion protection', () => {
    const { pets } = tablesOf('production')
    expect(pets.DeletionPolicy).toBe('Retain')
    expect(pets.UpdateReplacePolicy).toBe('Retain')
    expect(propsOf(pets)).toMatchObject({ DeletionProtectionEnabled: true })
  })

  it('staging may be destroyed with its stack', () => {
    const { pets } = tablesOf('staging')
    expect(pets.DeletionPolicy).toBe('Delete')
    expect(propsOf(pets)).toMatchObject({ DeletionProtectionEnabled: false })
  })

  it('production keeps the usage history (the rate-limit table): retained through a stack deletion or replacement, protected against DeleteTable, recoverable to any point in time', () => {
    const { rateLimits } = tablesOf('production')
    // Kept except after a failed first create, which leaves no empty table for a retry to meet.
    expect(rateLimits.DeletionPolicy).toBe('RetainExceptOnCreate')
    expect(rateLimits.UpdateReplacePolicy).toBe('Retain')
    expect(propsOf(rateLimits)).toMatchObject({
      DeletionProtectionEnabled: true,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    })
  })

  it('staging may destroy its usage history with the stack, and can restore it after a bad write', () => {
    const { rateLimits } = tablesOf('staging')
    expect(rateLimits.DeletionPolicy).toBe('Delete')
    expect(propsOf(rateLimits)).toMatchObject({
      DeletionProtectionEnabled: false,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    })
  })

  it('production keeps its store keys and their MAC secrets: nothing can rebuild them', () => {
    const { storeKeys } = tablesOf('production')
    expect(storeKeys.DeletionPolicy).toBe('RetainExceptOnCreate')
    expect(storeKeys.UpdateReplacePolicy).toBe('Retain')
    expect(propsOf(storeKeys)).toMatchObject({ DeletionProtectionEnabled: true })
    for (const [, secret] of resourcesOf(
      appStage('production').data,
      'AWS::SecretsManager::Secret',
    )) {
      expect(secret.DeletionPolicy).toBe('RetainExceptOnCreate')
    }
    const staging = tablesOf('staging').storeKeys
    expect(staging.DeletionPolicy).toBe('Delete')
  })

  it('the key mirror is disposable in every stage: the key sync rebuilds it every minute', () => {
    for (const stage of ['staging', 'production'] as const) {
      const { keyMirror } = tablesOf(stage)
      expect(keyMirror.DeletionPolicy).toBe('Delete')
      expect(propsOf(keyMirror)).toMatchObject({ DeletionProtectionEnabled: false })
    }
  })
})
