import { createHash } from 'node:crypto'
import { GetCommand } from '@aws-sdk/lib-dynamodb'
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda'
import { floorClient } from './floor-client.ts'

/** The authorizer's floor: hash the token, one GetItem on the key mirror, an Allow policy. */
export const handler = async (
  event: APIGatewayTokenAuthorizerEvent,
): Promise<APIGatewayAuthorizerResult> => {
  const key = event.authorizationToken.replace(/^Bearer\s+/i, '')
  const { Item } = await floorClient.send(
    new GetCommand({
      TableName: process.env.KEY_MIRROR_TABLE_NAME,
      Key: { keyHash: createHash('sha256').update(key).digest('hex') },
    }),
  )
  if (!Item) throw new Error('Unauthorized')
  return {
    principalId: String(Item.keyId),
    usageIdentifierKey: key,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: event.methodArn }],
    },
  }
}
