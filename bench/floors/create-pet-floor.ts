import { randomInt } from 'node:crypto'
import { PutCommand } from '@aws-sdk/lib-dynamodb'
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda'
import { floorClient, withLimiterCall } from './floor-client.ts'

/** createPet's floor: parse the body, one PutItem, a JSON answer; no ids, checks or limits. */
export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
  const pet = { id: randomInt(1, 2 ** 47), ...JSON.parse(event.body ?? '{}') }
  await withLimiterCall(
    floorClient.send(
      new PutCommand({ TableName: process.env.TABLE_NAME, Item: { pk: `PET#${pet.id}`, ...pet } }),
    ),
  )
  return { statusCode: 201, body: JSON.stringify(pet) }
}
