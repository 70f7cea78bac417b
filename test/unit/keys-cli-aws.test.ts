import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation'
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { mockClient } from 'aws-sdk-client-mock'
import { describe, expect, it } from 'vitest'
import { stackName } from '#infra/config/stack-names-config.ts'
import { STAGE_NAMES } from '#infra/config/stage-config.ts'
import { parseDuration } from '#ops/keys-command.ts'
import { readStackOutputs } from '#ops/stack-outputs-reader.ts'
import { AwsStageSync, CLI_SYNC_EVENT } from '#ops/stage-sync-client.ts'
import { DEPLOYED_STAGES, localOrigin, openStageTarget } from '#ops/stage-target-resolver.ts'
import type { KeyMirrorItem } from '#shared/data/key-mirror-item.ts'

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

  it('knows exactly the stages the CDK app deploys, and refuses others before any call', async () => {
    expect([...DEPLOYED_STAGES]).toEqual([...STAGE_NAMES])
    await expect(
      openStageTarget({ stage: 'prod', env: {}, warn: () => undefined }),
    ).rejects.toThrow('--stage must be one of staging, production')
  })
})

describe("a deployed stage's sync and mirror", () => {
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
    expect(await sync.run()).toEqual(result)
    const [call] = mock.commandCalls(InvokeCommand)
    expect(call?.args[0].input).toMatchObject({
      FunctionName: API_OUTPUTS.KeySyncFunctionName,
      InvocationType: 'RequestResponse',
    })
    const sent = JSON.parse(new TextDecoder().decode(call?.args[0].input.Payload as Uint8Array))
    // Not a CloudTrail event: the handler runs a whole sync at once for it.
    expect(sent).toEqual(CLI_SYNC_EVENT)
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
    await expect(sync.run()).rejects.toThrow('The key sync failed: Inconsistent read')
    expect(await sync.mirrored('b'.repeat(64))).toBeUndefined()
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
