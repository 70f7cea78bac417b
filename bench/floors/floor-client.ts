import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb'

/** The floors' client: the SDK's defaults, nothing else (what a bare handler would have). */
export const floorClient = DynamoDBDocumentClient.from(new DynamoDBClient({}))

/**
 * With FLOOR_WITH_LIMITER set, a floor also makes the one write an exact shared rate limit costs
 * (counters in DynamoDB, docs/rate-limits-and-keys.md), alongside its own call: the floor of a
 * rate-limited API.
 */
export const withLimiterCall = async <T>(call: Promise<T>): Promise<T> => {
  if (!process.env.FLOOR_WITH_LIMITER) return call
  const [result] = await Promise.all([
    call,
    floorClient.send(
      new UpdateCommand({
        TableName: process.env.RATE_LIMIT_TABLE_NAME,
        Key: { pk: 'floor#2026-11-22' },
        UpdateExpression: 'ADD #day :one',
        ExpressionAttributeNames: { '#day': 'd' },
        ExpressionAttributeValues: { ':one': 1 },
      }),
    ),
  ])
  return result
}
