import { GetCommand } from '@aws-sdk/lib-dynamodb'
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda'
import { floorClient, withLimiterCall } from './floor-client.ts'

/** getPet's floor: its one SDK call and a JSON answer, no middleware, no validation. */
export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
  const { Item } = await withLimiterCall(
    floorClient.send(
      new GetCommand({
        TableName: process.env.TABLE_NAME,
        Key: { pk: `PET#${event.pathParameters?.petId}` },
      }),
    ),
  )
  return { statusCode: Item ? 200 : 404, body: JSON.stringify(Item ?? {}) }
}
