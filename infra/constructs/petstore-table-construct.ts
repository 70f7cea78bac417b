import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb'
import type { RemovalPolicy } from 'aws-cdk-lib'
import {
  type Attribute,
  AttributeType,
  BillingMode,
  ProjectionType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb'
import { Construct } from 'constructs'

export interface PetstoreTableProps {
  /**
   * The CreateTable input the local server and tests use (shared/data/table-keys.ts): the CDK
   * table takes its keys, attribute types and indexes from it, so the two cannot drift apart.
   */
  definition: CreateTableCommandInput
  removalPolicy: RemovalPolicy
  deletionProtection: boolean
  pointInTimeRecovery: boolean
  timeToLiveAttribute?: string
}

const ATTRIBUTE_TYPES = {
  S: AttributeType.STRING,
  N: AttributeType.NUMBER,
  B: AttributeType.BINARY,
}

const keysOf = (
  definition: CreateTableCommandInput,
  keySchema: CreateTableCommandInput['KeySchema'],
): { partitionKey: Attribute; sortKey?: Attribute } => {
  const attribute = (keyType: 'HASH' | 'RANGE'): Attribute | undefined => {
    const name = keySchema?.find((key) => key.KeyType === keyType)?.AttributeName
    if (name === undefined) return undefined
    const type = definition.AttributeDefinitions?.find(
      (candidate) => candidate.AttributeName === name,
    )?.AttributeType
    if (type === undefined) throw new Error(`Key ${name} has no attribute definition`)
    return { name, type: ATTRIBUTE_TYPES[type] }
  }
  const partitionKey = attribute('HASH')
  if (!partitionKey) throw new Error(`Table ${definition.TableName} has no partition key`)
  const sortKey = attribute('RANGE')
  return sortKey ? { partitionKey, sortKey } : { partitionKey }
}

/**
 * An on-demand table with server-side encryption (AWS-managed KMS key, so functions need no KMS
 * grant) built from a shared CreateTable definition. The table name is left to CloudFormation;
 * functions get it through their environment.
 */
export class PetstoreTable extends Construct {
  readonly table: Table

  constructor(scope: Construct, id: string, props: PetstoreTableProps) {
    super(scope, id)
    const { definition } = props
    if (definition.BillingMode !== 'PAY_PER_REQUEST') {
      throw new Error(`Table ${definition.TableName} must be on-demand (PAY_PER_REQUEST)`)
    }
    this.table = new Table(this, 'Table', {
      ...keysOf(definition, definition.KeySchema),
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: props.pointInTimeRecovery },
      deletionProtection: props.deletionProtection,
      removalPolicy: props.removalPolicy,
      ...(props.timeToLiveAttribute ? { timeToLiveAttribute: props.timeToLiveAttribute } : {}),
    })
    for (const index of definition.GlobalSecondaryIndexes ?? []) {
      if (index.Projection?.ProjectionType !== 'ALL') {
        throw new Error(`Index ${index.IndexName}: only ALL projections are supported`)
      }
      this.table.addGlobalSecondaryIndex({
        indexName: index.IndexName as string,
        ...keysOf(definition, index.KeySchema),
        projectionType: ProjectionType.ALL,
      })
    }
  }
}
