import { CfnOutput, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib'
import type { ITable } from 'aws-cdk-lib/aws-dynamodb'
import type { Construct } from 'constructs'
import type { StageConfig } from '#infra/config/stage-config.ts'
import { PetstoreTable } from '#infra/constructs/petstore-table-construct.ts'
import {
  petTableDefinition,
  RATE_LIMIT_TABLE,
  rateLimitTableDefinition,
} from '#shared/data/table-schema.ts'

export interface PetstoreDataStackProps extends StackProps {
  config: StageConfig
}

/**
 * The stage's state, in a stack of its own so the API stack can be replaced or torn down
 * without touching data. The pet id counter item (`pk = COUNTER#pet`) needs no seeding and so no
 * custom resource: the id allocator creates it on first use with `if_not_exists`.
 */
export class PetstoreDataStack extends Stack {
  readonly petTable: ITable
  readonly rateLimitTable: ITable

  constructor(scope: Construct, id: string, { config, ...props }: PetstoreDataStackProps) {
    super(scope, id, { terminationProtection: config.retainData, ...props })

    // The names passed to the definitions only label errors: CloudFormation names the tables.
    this.petTable = new PetstoreTable(this, 'PetTable', {
      definition: petTableDefinition('pets'),
      // Production keeps its pets: retained on stack deletion, protected against DeleteTable,
      // restorable to any second of the last 35 days.
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      deletionProtection: config.retainData,
      pointInTimeRecovery: true,
    }).table

    const rateLimits = new PetstoreTable(this, 'RateLimitTable', {
      definition: rateLimitTableDefinition('rate-limits'),
      // Counters of the current minute and day only, expired by TTL: nothing worth keeping.
      removalPolicy: RemovalPolicy.DESTROY,
      deletionProtection: false,
      pointInTimeRecovery: false,
      timeToLiveAttribute: RATE_LIMIT_TABLE.ttlAttribute,
    })
    this.rateLimitTable = rateLimits.table
    Validations.of(rateLimits).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason:
        'The rate-limit table holds only per-minute and per-day counters that expire by TTL; restoring them to an earlier point would serve no one.',
    })

    new CfnOutput(this, 'PetTableName', { value: this.petTable.tableName })
    new CfnOutput(this, 'RateLimitTableName', { value: this.rateLimitTable.tableName })
  }
}
