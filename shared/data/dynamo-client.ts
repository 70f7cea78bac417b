import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb'

/**
 * One document client per process, created at module scope by each function entry.
 * Numbers come back wrapped (NumberValue) so int64 attributes are never rounded.
 * `DYNAMODB_ENDPOINT` points the SDK at the embedded DynamoDB, DynamoDB Local or another endpoint.
 */
export const createDocumentClient = (
  config: DynamoDBClientConfig = dynamoConfigFromEnv(),
): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient(config), {
    marshallOptions: { removeUndefinedValues: true },
    unmarshallOptions: { wrapNumbers: true },
  })

export const dynamoConfigFromEnv = (env: NodeJS.ProcessEnv = process.env): DynamoDBClientConfig => {
  const endpoint = env.DYNAMODB_ENDPOINT
  return endpoint ? { endpoint, maxAttempts: 3 } : { maxAttempts: 3 }
}
