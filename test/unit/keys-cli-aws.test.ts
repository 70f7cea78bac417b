import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation'
import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb'
import { mockClient } from 'aws-sdk-client-mock'
import { describe, expect, it } from 'vitest'
import { parseDuration } from '#ops/keys/keys-change-commands.ts'
import {
  AwsStageSync,
  CLI_SYNC_EVENT,
  isRetryableSyncFailure,
} from '#ops/keys/stage-sync-client.ts'
import { localOrigin, openStageTarget } from '#ops/keys/stage-target-resolver.ts'
import { readStackOutputs } from '#ops/stage/stack-outputs-reader.ts'
import { stackName } from '#shared/config/stack-names-config.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'
import { KeyMirrorReader } from '#shared/data/key-mirror-reader.ts'

/**
 * What the keys CLI does against AWS that the local server does not exercise: finding a stage by
 * its stack outputs (CloudFormation), running its sync (a synchronous Lambda Invoke of the
 * key-sync function) and reading its key mirror. The clients are aws-sdk-client-mock stubs.
 */
const API_OUTPUTS = {
  BaseUrl: 'https://abc123.execute-api.eu-west-1.amazonaws.com/staging/v1',
  RestApiId: 'abc123',
  StageName: 'staging',
  FreeUsagePlanId: 'pfree1',
  ProUsagePlanId: 'ppro01',
  BusinessUsagePlanId: 'pbiz01',
  EnterpriseUsagePlanId: 'pent01',
  KeySyncFunctionName: 'petstore-staging-api-KeySync1234',
  AlarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms',
}
const DATA_OUTPUTS = { PetTableName: 'pets', KeyMirrorTableName: 'petstore-staging-key-mirror' }

const cloudFormationWith = (stacks: Record<string, Record<string, string> | undefined>) => {
  const client = new CloudFormationClient({ region: 'eu-west-1' })
  mockClient(client)
    .on(DescribeStacksCommand)
    .callsFake(async ({ StackName }: { StackName: string }) => {
      const outputs = stacks[StackName]
      if (!outputs) throw new Error(`Stack with id ${StackName} does not exist`)
      return {
        Stacks: [
          {
            StackName,
            StackStatus: 'UPDATE_COMPLETE',
            CreationTime: new Date(),
            Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({
              OutputKey,
              OutputValue,
            })),
          },
        ],
      }
    })
  return client
}

describe('a deployed stage, found by its stack outputs', () => {
  it('reads the API and data stacks of the stage', async () => {
    const client = cloudFormationWith({
      [stackName('staging', 'api')]: API_OUTPUTS,
      [stackName('staging', 'data')]: DATA_OUTPUTS,
    })
    expect(await readStackOutputs(client, 'staging')).toEqual({
      baseUrl: API_OUTPUTS.BaseUrl,
      restApiId: 'abc123',
      stageName: 'staging',
      planIds: { free: 'pfree1', pro: 'ppro01', business: 'pbiz01', enterprise: 'pent01' },
      keySyncFunctionName: API_OUTPUTS.KeySyncFunctionName,
      keyMirrorTableName: DATA_OUTPUTS.KeyMirrorTableName,
    })
  })

  it('names, for a fix by hand, the command with the stage and Region it was given', async () => {
    const stacks = mockClient(CloudFormationClient)
      .on(DescribeStacksCommand)
      .callsFake(async ({ StackName }: { StackName: string }) => ({
        Stacks: [
          {
            StackName,
            StackStatus: 'UPDATE_COMPLETE',
            CreationTime: new Date(),
            Outputs: Object.entries(
              StackName === stackName('production', 'api') ? API_OUTPUTS : DATA_OUTPUTS,
            ).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
          },
        ],
      }))
    try {
      const target = await openStageTarget({
        stage: 'production',
        region: 'eu-west-1',
        env: {},
        warn: () => undefined,
      })
      target.close()
      expect(target.admin.revokeCommand('abc123defg')).toBe(
        'npm run keys -- --stage production --region eu-west-1 revoke abc123defg',
      )
    } finally {
      stacks.restore()
    }
  })

  it('names the output a stage lacks, or the stack that is missing', async () => {
    const { ProUsagePlanId: _, ...withoutPro } = API_OUTPUTS
    await expect(
      readStackOutputs(
        cloudFormationWith({
          'petstore-production-api': withoutPro,
          'petstore-production-data': DATA_OUTPUTS,
        }),
        'production',
      ),
    ).rejects.toThrow(
      'Stack petstore-production-api has no output ProUsagePlanId: deploy the stage first',
    )
    await expect(
      readStackOutputs(
        cloudFormationWith({
          'petstore-production-api': API_OUTPUTS,
          'petstore-production-data': {},
        }),
        'production',
      ),
    ).rejects.toThrow('Stack petstore-production-data has no output KeyMirrorTableName')
    await expect(readStackOutputs(cloudFormationWith({}), 'staging')).rejects.toThrow(
      'petstore-staging-api does not exist',
    )
  })

  it('refuses a stage the CDK app does not deploy before any call', async () => {
    await expect(
      openStageTarget({ stage: 'prod', env: {}, warn: () => undefined }),
    ).rejects.toThrow('--stage must be one of staging, production')
  })
})

const item: KeyMirrorItem = {
  keyHash: 'a'.repeat(64),
  keyId: 'k1',
  enabled: true,
  plan: 'pro',
  perMinute: 300,
  perDay: 10_000,
  usagePlanId: 'ppro01',
  syncedAt: '2026-11-22T12:00:00.000Z',
}

describe("a deployed stage's sync and mirror", () => {
  it('runs the sync with a synchronous Invoke of the key-sync function, and answers its result', async () => {
    const lambda = new LambdaClient({ region: 'eu-west-1' })
    const result = { skipped: false, upserted: 5, written: 1, deleted: 0, heldRemovals: 0 }
    const mock = mockClient(lambda)
      .on(InvokeCommand)
      .resolves({
        StatusCode: 200,
        Payload: new TextEncoder().encode(JSON.stringify(result)) as never,
      })
    const sync = new AwsStageSync({
      lambda,
      functionName: API_OUTPUTS.KeySyncFunctionName,
      mirror: { get: async () => item },
      tableName: DATA_OUTPUTS.KeyMirrorTableName,
    })
    expect(await sync.run(['k1', 'planpro'])).toEqual(result)
    const [call] = mock.commandCalls(InvokeCommand)
    expect(call?.args[0].input).toMatchObject({
      FunctionName: API_OUTPUTS.KeySyncFunctionName,
      InvocationType: 'RequestResponse',
    })
    const sent = JSON.parse(new TextDecoder().decode(call?.args[0].input.Payload as Uint8Array))
    // Not a CloudTrail event; it names what the change touched, for the run to read first.
    expect(sent).toEqual({ ...CLI_SYNC_EVENT, detail: { ids: ['k1', 'planpro'] } })
    expect(sent['detail-type']).not.toBe('AWS API Call via CloudTrail')
    expect(await sync.mirrored(item.keyHash)).toEqual({
      keyId: 'k1',
      plan: 'pro',
      perMinute: 300,
      perDay: 10_000,
      usagePlanId: 'ppro01',
    })
  })

  it("reports a failed sync with the function's own error message", async () => {
    const lambda = new LambdaClient({ region: 'eu-west-1' })
    mockClient(lambda)
      .on(InvokeCommand)
      .resolves({
        StatusCode: 200,
        FunctionError: 'Unhandled',
        Payload: new TextEncoder().encode(
          JSON.stringify({
            errorType: 'InconsistentKeyReadError',
            errorMessage: 'Inconsistent read',
          }),
        ) as never,
      })
    const sync = new AwsStageSync({
      lambda,
      functionName: 'f',
      mirror: { get: async () => undefined },
      tableName: DATA_OUTPUTS.KeyMirrorTableName,
    })
    await expect(sync.run([])).rejects.toThrow('The key sync failed: Inconsistent read')
    expect(await sync.mirrored('b'.repeat(64))).toBeUndefined()
  })
})

describe('what the sync step retries, and what it ends the command with', () => {
  const FUNCTION = API_OUTPUTS.KeySyncFunctionName
  const TABLE = DATA_OUTPUTS.KeyMirrorTableName
  const sdkError = (name: string, status: number, message = 'from AWS') =>
    Object.assign(new Error(message), { name, $metadata: { httpStatusCode: status } })

  const syncInvoking = (answer: (mock: ReturnType<typeof mockClient>) => void) => {
    const lambda = new LambdaClient({ region: 'eu-west-1' })
    answer(mockClient(lambda) as never)
    return new AwsStageSync({
      lambda,
      functionName: FUNCTION,
      mirror: { get: async () => undefined },
      tableName: TABLE,
    })
  }
  const failureOf = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => ({
        message: (error as Error).message,
        retryable: isRetryableSyncFailure(error),
      }),
    )

  it.each([
    [
      'a missing function',
      sdkError('ResourceNotFoundException', 404, `Function not found: ${FUNCTION}`),
      `No key-sync function ${FUNCTION} in this account and Region (ResourceNotFoundException, HTTP 404: Function not found: ${FUNCTION}): check --region (or AWS_REGION), or deploy the stage`,
      false,
    ],
    [
      'a role without lambda:InvokeFunction',
      sdkError('AccessDeniedException', 403),
      `Your role may not run the key sync (AccessDeniedException, HTTP 403: from AWS): add lambda:InvokeFunction on ${FUNCTION} to your role`,
      false,
    ],
    [
      'throttling',
      sdkError('TooManyRequestsException', 429, 'Rate exceeded'),
      'Lambda throttled the key sync (TooManyRequestsException, HTTP 429: Rate exceeded)',
      true,
    ],
  ])('an invoke refused for %s', async (_, error, message, retryable) => {
    const sync = syncInvoking((mock) => mock.on(InvokeCommand).rejects(error))
    expect(await failureOf(sync.run([]))).toEqual({ message, retryable })
  })

  it.each([
    ['InconsistentKeyReadError', true],
    ['TooManyRequestsException', true],
    ['AccessDeniedException', false],
    ['Sandbox.Timedout', false],
  ])(
    'a run that failed with %s is tried again within the wait: %s',
    async (errorType, retryable) => {
      const sync = syncInvoking((mock) =>
        mock.on(InvokeCommand).resolves({
          StatusCode: 200,
          FunctionError: 'Unhandled',
          Payload: new TextEncoder().encode(
            JSON.stringify({ errorType, errorMessage: 'what the run said' }),
          ) as never,
        }),
      )
      expect(await failureOf(sync.run([]))).toEqual({
        message: `The key sync failed: what the run said (${errorType}; see the key-sync log)`,
        retryable,
      })
    },
  )

  it('reads the key mirror strongly consistent, and names the table a read is refused on', async () => {
    const documentClient = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'eu-west-1' }))
    const dynamo = mockClient(documentClient)
    dynamo.on(GetCommand).resolves({ Item: item })
    const sync = new AwsStageSync({
      lambda: new LambdaClient({ region: 'eu-west-1' }),
      functionName: FUNCTION,
      mirror: new KeyMirrorReader({ client: documentClient, tableName: TABLE }),
      tableName: TABLE,
    })
    expect(await sync.mirrored(item.keyHash)).toMatchObject({ keyId: 'k1' })
    expect(dynamo.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: TABLE,
      Key: { keyHash: item.keyHash },
      ConsistentRead: true,
    })
    dynamo.on(GetCommand).rejects(sdkError('AccessDeniedException', 400))
    expect(await failureOf(sync.mirrored(item.keyHash))).toEqual({
      message: `Your role may not read the key mirror (AccessDeniedException, HTTP 400: from AWS): add dynamodb:GetItem on table ${TABLE} to your role`,
      retryable: false,
    })
    dynamo.on(GetCommand).rejects(sdkError('ProvisionedThroughputExceededException', 400))
    expect(await failureOf(sync.mirrored(item.keyHash))).toMatchObject({ retryable: true })
  })
})

describe('a stage the settings do not reach', () => {
  it('names the Region a stack is missing from, and the Region setting', async () => {
    const client = new CloudFormationClient({ region: 'us-west-2' })
    mockClient(client)
      .on(DescribeStacksCommand)
      .rejects(
        Object.assign(new Error('Stack with id petstore-staging-api does not exist'), {
          name: 'ValidationError',
          $metadata: { httpStatusCode: 400 },
        }),
      )
    await expect(readStackOutputs(client, 'staging')).rejects.toThrow(
      'Stack petstore-staging-api does not exist in Region us-west-2 of this account: deploy the stage, or pass the Region it is in (--region or AWS_REGION)',
    )
  })

  it('names the IAM action a role lacks to read the stacks', async () => {
    const client = new CloudFormationClient({ region: 'eu-west-1' })
    mockClient(client)
      .on(DescribeStacksCommand)
      .rejects(
        Object.assign(new Error('not authorized to perform: cloudformation:DescribeStacks'), {
          name: 'AccessDenied',
          $metadata: { httpStatusCode: 403 },
        }),
      )
    await expect(readStackOutputs(client, 'production')).rejects.toThrow(
      'add cloudformation:DescribeStacks on it to your role',
    )
  })
})

describe('keys CLI settings', () => {
  it('finds the local server where npm start listens', () => {
    expect(localOrigin({})).toBe('http://127.0.0.1:3000')
    expect(localOrigin({ PORT: '3001', HOST: '0.0.0.0' })).toBe('http://127.0.0.1:3001')
    expect(localOrigin({ HOST: '::1' })).toBe('http://[::1]:3000')
  })

  it.each([
    ['24h', 86_400_000],
    ['90m', 5_400_000],
    ['2d', 172_800_000],
    ['30s', 30_000],
  ])('reads the overlap %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms)
  })

  it.each(['24', '1.5h', '-1h', 'h', '1w'])('refuses the overlap %s', (text) => {
    expect(() => parseDuration(text)).toThrow('--overlap must look like 24h')
  })
})
