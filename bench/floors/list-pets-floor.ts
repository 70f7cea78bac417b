import { QueryCommand } from '@aws-sdk/lib-dynamodb'
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda'
import { floorClient, withLimiterCall } from './floor-client.ts'

/** listPets' floor: one Query of the status index and a JSON array, nothing else. */
export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
  const { Items = [] } = await withLimiterCall(
    floorClient.send(
      new QueryCommand({
        TableName: process.env.TABLE_NAME,
        IndexName: 'status-id-index',
        KeyConditionExpression: '#status = :status',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':status': event.queryStringParameters?.status ?? 'available',
        },
        Limit: Number(event.queryStringParameters?.limit ?? 20) + 1,
      }),
    ),
  )
  return { statusCode: 200, body: JSON.stringify(Items) }
}
