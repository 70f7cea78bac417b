import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  BatchWriteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  authorizationsOf,
  type DynamoIamGuard,
  startDynamoIamGuard,
} from '#local/deployed-iam/dynamo-iam-guard.ts'
import type { FunctionRole } from '#local/deployed-iam/stage-roles.ts'
import { type DynamoTestEnv, startDynamoTestEnv } from '#test/support/dynamo-test-env.ts'

/**
 * DynamoDB behind a function's deployed role, over HTTP through the SDK as the functions reach
 * it: what the role allows goes through to DynamoDB; what it does not (another table, an index it
 * does not name, a key outside its `dynamodb:LeadingKeys`) is DynamoDB's AccessDeniedException,
 * the request never reaching the table.
 */
let env: DynamoTestEnv
let guard: DynamoIamGuard
const account = '000000000000'
const arn = (table: string) => `arn:aws:dynamodb:us-east-1:${account}:table/${table}`

const role = (service: string, statements: object[]): [string, FunctionRole] => [
  service,
  {
    service,
    roleName: `${service}Role`,
    policies: { identityPolicies: [{ Version: '2012-10-17', Statement: statements as never }] },
    variables: [],
    unresolved: [],
  },
]

beforeAll(async () => {
  env = await startDynamoTestEnv()
  guard = await startDynamoIamGuard({
    upstream: env.endpoint,
    region: 'us-east-1',
    account,
    record: true,
    tables: new Map([[env.petTable, { key: 'pets', partitionKey: 'pk' }]]),
    roles: new Map([
      role('getPet', [
        { Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: arn(env.petTable) },
      ]),
      role('listPets', [
        {
          Effect: 'Allow',
          Action: 'dynamodb:Query',
          Resource: `${arn(env.petTable)}/index/status-id-index`,
        },
      ]),
      role('key-sync', [
        {
          Effect: 'Allow',
          Action: ['dynamodb:PutItem', 'dynamodb:BatchWriteItem'],
          Resource: arn(env.petTable),
          Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['#own'] } },
        },
      ]),
    ]),
  })
})
afterAll(async () => {
  await guard?.close()
  await env?.close()
})

const clientOf = (service: string) =>
  new DynamoDBClient({
    endpoint: guard.endpointFor(service),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  })

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'allowed',
    (error: Error) => `${error.name}: ${error.message}`,
  )

describe("DynamoDB behind a function's deployed role", () => {
  it('lets through what the role allows, to the table itself', async () => {
    await env.client.send(
      new PutItemCommand({ TableName: env.petTable, Item: { pk: { S: 'PET#1' } } }),
    )
    const { Item } = await clientOf('getPet').send(
      new GetItemCommand({ TableName: env.petTable, Key: { pk: { S: 'PET#1' } } }),
    )
    expect(Item).toEqual({ pk: { S: 'PET#1' } })
  })

  it('refuses the table to a role granted one of its indexes, and an index the role does not name', async () => {
    const listPets = clientOf('listPets')
    expect(
      await refusal(
        listPets.send(
          new QueryCommand({
            TableName: env.petTable,
            IndexName: 'status-id-index',
            KeyConditionExpression: '#s = :s',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':s': { S: 'sold' } },
          }),
        ),
      ),
    ).toBe('allowed')
    expect(await refusal(listPets.send(new ScanCommand({ TableName: env.petTable })))).toMatch(
      /^AccessDeniedException: listPets may not dynamodb:Scan on arn:aws:dynamodb:us-east-1:000000000000:table\/test-pets-/,
    )
    expect(
      await refusal(
        listPets.send(new ScanCommand({ TableName: env.petTable, IndexName: 'category-id-index' })),
      ),
    ).toMatch(/may not dynamodb:Scan on .*\/index\/category-id-index/)
  })

  it('holds a role to the partition keys its condition names, item by item in a batch', async () => {
    const sync = clientOf('key-sync')
    const put = (pk: string) => ({ PutRequest: { Item: { pk: { S: pk } } } })
    expect(
      await refusal(
        sync.send(new PutItemCommand({ TableName: env.petTable, Item: { pk: { S: '#own' } } })),
      ),
    ).toBe('allowed')
    expect(
      await refusal(
        sync.send(
          new BatchWriteItemCommand({
            RequestItems: { [env.petTable]: [put('#own'), put('PET#9')] },
          }),
        ),
      ),
    ).toMatch(/^AccessDeniedException: key-sync may not dynamodb:BatchWriteItem/)
    const { Item } = await env.client.send(
      new GetItemCommand({ TableName: env.petTable, Key: { pk: { S: 'PET#9' } } }),
    )
    expect(Item).toBeUndefined()
  })

  it('refuses a caller that is none of the stage’s functions', async () => {
    expect(
      await refusal(clientOf('deletePet').send(new ScanCommand({ TableName: env.petTable }))),
    ).toMatch(/^AccessDeniedException: no function of the stage is called deletePet/)
  })

  it('keeps every refusal with its fix, and every authorization when asked to', () => {
    expect(guard.denials()).toHaveLength(4)
    expect(
      guard
        .requests()
        .filter((request) => !request.allowed)
        .map((r) => `${r.service} ${r.action}`),
    ).toEqual(['listPets Scan', 'listPets Scan', 'key-sync BatchWriteItem'])
  })
})

describe('a guard that closes', () => {
  it('lets a request on its way to DynamoDB finish (a write that outlives its answer is not cut off)', async () => {
    // A DynamoDB that takes its time: the request is in flight when the guard is closed.
    const slow = createServer((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0' })
        res.end('{}')
      }, 300)
    })
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    const closing = await startDynamoIamGuard({
      upstream: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`,
      region: 'us-east-1',
      account,
      tables: new Map(),
      roles: new Map([role('getPet', [{ Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' }])]),
    })
    const client = new DynamoDBClient({
      endpoint: closing.endpointFor('getPet'),
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    })
    const call = refusal(
      client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } })),
    )
    await new Promise((resolve) => setTimeout(resolve, 100))
    await closing.close()
    expect(await call).toBe('allowed')
    client.destroy()
    slow.close()
  })
})

describe('what IAM authorizes for a DynamoDB call', () => {
  const partitionKeyOf = () => 'pk'
  it('authorizes each part of a transaction as its single-item action, with its key', () => {
    expect(
      authorizationsOf(
        'TransactWriteItems',
        {
          TransactItems: [
            { Put: { TableName: 'a', Item: { pk: { S: '1' } } } },
            { ConditionCheck: { TableName: 'b', Key: { pk: { N: '2' } } } },
          ],
        },
        partitionKeyOf,
      ),
    ).toEqual([
      { action: 'PutItem', tableName: 'a', indexName: undefined, leadingKeys: ['1'] },
      { action: 'ConditionCheckItem', tableName: 'b', indexName: undefined, leadingKeys: ['2'] },
    ])
  })

  it('names a table given by its ARN by its name, and a Query or Scan without keys', () => {
    expect(
      authorizationsOf('Query', { TableName: arn('pets'), IndexName: 'i' }, partitionKeyOf),
    ).toEqual([{ action: 'Query', tableName: 'pets', indexName: 'i', leadingKeys: undefined }])
  })
})
