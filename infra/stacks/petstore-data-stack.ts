import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb'
import { CfnOutput, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import { Secret } from 'aws-cdk-lib/aws-secretsmanager'
import type { Construct } from 'constructs'
import { KEY_MAC_VERSIONS, type KeyMacSecret } from '#infra/config/key-mac-config.ts'
import { indexChangeProblem } from '#infra/config/released-indexes-config.ts'
import { type StageConfig, usageHistoryRemovalPolicy } from '#infra/config/stage-config.ts'
import { PetstoreTable } from '#infra/constructs/petstore-table-construct.ts'
import {
  IDEMPOTENCY_TABLE,
  idempotencyTableDefinition,
  keyMirrorTableDefinition,
  petTableDefinition,
  RATE_LIMIT_TABLE,
  rateLimitTableDefinition,
  storeKeyTableDefinition,
} from '#shared/data/table-keys.ts'

// A stage's tables, each made from its one definition (shared/data/table-keys.ts).

/** One index added or deleted per table and deploy, over the last release's (the record says why). */
const refuseSecondIndexChange = (definitions: Record<string, CreateTableCommandInput>): void => {
  for (const [table, definition] of Object.entries(definitions)) {
    const names = (definition.GlobalSecondaryIndexes ?? []).map(
      (index) => index.IndexName as string,
    )
    const problem = indexChangeProblem(table, names)
    if (problem) throw new Error(problem)
  }
}

export interface PetstoreDataStackProps extends StackProps {
  config: StageConfig
}

/**
 * The stage's state (pets, rate-limit counters and usage history, the key mirror), in a stack of its own so the API stack can be replaced or torn down
 * without touching data. The pet id counter item (`pk = COUNTER#pet`) needs no seeding and so no
 * custom resource: the id allocator creates it on first use with `if_not_exists`.
 */
export class PetstoreDataStack extends Stack {
  readonly petTable: ITable
  readonly rateLimitTable: ITable
  readonly idempotencyTable: ITable
  readonly keyMirrorTable: ITable
  /** Keys that live only in the project's store, beyond API Gateway's 10,000 per Region. */
  readonly storeKeyTable: ITable
  /** The key MAC secret, one per version in use (infra/config/key-mac-config.ts). */
  readonly keyMacSecrets: KeyMacSecret[]

  constructor(scope: Construct, id: string, { config, ...props }: PetstoreDataStackProps) {
    super(scope, id, { terminationProtection: config.retainData, ...props })
    refuseSecondIndexChange({
      pets: petTableDefinition('pets'),
      rateLimits: rateLimitTableDefinition('rate-limits'),
      idempotency: idempotencyTableDefinition('idempotency'),
      keyMirror: keyMirrorTableDefinition('key-mirror'),
      storeKeys: storeKeyTableDefinition('store-keys'),
    })

    // The names passed to the definitions only label errors: CloudFormation names the tables.
    this.petTable = new PetstoreTable(this, 'PetTable', {
      definition: petTableDefinition('pets'),
      // Production keeps its pets: retained on stack deletion, protected against DeleteTable,
      // restorable to any second of the last 35 days.
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      deletionProtection: config.retainData,
      pointInTimeRecovery: true,
    }).table

    // The limiter's counters, and in its day items the usage history billing reads (each key's
    // admitted requests per UTC day, kept USAGE_RETENTION_DAYS by TTL): nothing can rebuild it.
    // Every stage can restore it to any second of the last 35 days (a bad write); production
    // keeps it through a stack deletion or replacement and refuses DeleteTable. Kept except
    // after a failed first create (RetainExceptOnCreate), so no empty table stays behind; and
    // CloudFormation names it, so a retry never meets one by name.
    this.rateLimitTable = new PetstoreTable(this, 'RateLimitTable', {
      definition: rateLimitTableDefinition('rate-limits'),
      removalPolicy: usageHistoryRemovalPolicy(config),
      deletionProtection: config.retainData,
      pointInTimeRecovery: true,
      timeToLiveAttribute: RATE_LIMIT_TABLE.ttlAttribute,
    }).table

    const idempotency = new PetstoreTable(this, 'IdempotencyTable', {
      definition: idempotencyTableDefinition('idempotency'),
      // createPet's answers to Idempotency-Keys, for 24 hours, then expired by TTL.
      removalPolicy: RemovalPolicy.DESTROY,
      deletionProtection: false,
      pointInTimeRecovery: false,
      timeToLiveAttribute: IDEMPOTENCY_TABLE.ttlAttribute,
    })
    this.idempotencyTable = idempotency.table
    Validations.of(idempotency).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason:
        'Idempotency records only replay a create for 24 hours and expire by TTL; the pets they name are in the pet table, which has point-in-time recovery.',
    })

    const keyMirror = new PetstoreTable(this, 'KeyMirrorTable', {
      definition: keyMirrorTableDefinition('key-mirror'),
      // A copy of the stage's API keys and usage plans that the key-sync function rebuilds from
      // API Gateway every minute: nothing to keep or restore.
      removalPolicy: RemovalPolicy.DESTROY,
      deletionProtection: false,
      pointInTimeRecovery: false,
    })
    this.keyMirrorTable = keyMirror.table
    Validations.of(keyMirror).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason:
        'The key mirror is rebuilt from the API Gateway keys and usage plans (the source of truth) every minute by the key-sync function; restoring an earlier copy would only bring back revoked keys.',
    })

    // Store keys: the only copy of each key's hash, plan and state (nothing can rebuild them), so
    // kept as the usage history is: restorable to any second of the last 35 days in every stage,
    // retained through a stack deletion or replacement and protected against DeleteTable in
    // production. CloudFormation names it.
    this.storeKeyTable = new PetstoreTable(this, 'StoreKeyTable', {
      definition: storeKeyTableDefinition('store-keys'),
      removalPolicy: usageHistoryRemovalPolicy(config),
      deletionProtection: config.retainData,
      pointInTimeRecovery: true,
    }).table

    // The key MAC secrets: random per stage and version, generated by Secrets Manager at deploy
    // time. Every key the project makes carries a MAC under one, so losing a secret would refuse
    // those keys: kept as the store keys are (retained in production).
    this.keyMacSecrets = KEY_MAC_VERSIONS.map((version) => {
      const secret = new Secret(this, `KeyMacSecretV${version}`, {
        description: `Petstore ${config.stage}: key MAC secret, version ${version}`,
        generateSecretString: { passwordLength: 64, excludePunctuation: true },
        removalPolicy: usageHistoryRemovalPolicy(config),
      })
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'A key MAC secret is rotated by adding a version (infra/config/key-mac-config.ts), not by Secrets Manager rotation: the version travels in every key, so a rotation must keep the old secret until its keys are rotated.',
      })
      return { version, secret }
    })
    const current = this.keyMacSecrets.at(-1) as KeyMacSecret

    new CfnOutput(this, 'PetTableName', { value: this.petTable.tableName })
    new CfnOutput(this, 'RateLimitTableName', { value: this.rateLimitTable.tableName })
    new CfnOutput(this, 'IdempotencyTableName', { value: this.idempotencyTable.tableName })
    new CfnOutput(this, 'KeyMirrorTableName', { value: this.keyMirrorTable.tableName })
    new CfnOutput(this, 'StoreKeyTableName', { value: this.storeKeyTable.tableName })
    new CfnOutput(this, 'KeyMacSecretArn', {
      description: 'The key MAC secret new keys are made with (the keys CLI reads it)',
      value: current.secret.secretArn,
    })
    new CfnOutput(this, 'KeyMacVersion', { value: String(current.version) })
  }
}
